# tests/lib/python-venv.sh: the one Python venv of the project (sourced by tests/run.sh, the
# cluster e2e test and bench/run.sh). Does I/O: creates the venv from PyPI when it is missing.
#
# python_venv   sets VENV and PYTHON; the venv lives under $KUBE_MCP_TEST_CACHE (default
#               ~/.cache/kube-mcp-test), keyed by the hash of tests/python/requirements.txt, so
#               a change of pins builds a new one and CI rebuilds the same one.

python_venv() {
  local root requirements cache key
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  requirements=$root/tests/python/requirements.txt
  cache=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
  key=$(sha256sum "$requirements" | cut -c1-12)
  VENV=$cache/venv-$key
  PYTHON=$VENV/bin/python
  if [[ ! -x $PYTHON ]] || ! "$PYTHON" -c 'import mcp, pytest' 2>/dev/null; then
    mkdir -p "$cache"
    python3 -m venv "$VENV" &&
      "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  fi
}
