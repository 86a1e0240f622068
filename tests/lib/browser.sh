# tests/lib/browser.sh: a real browser for page tests (sourced). Does I/O: installs Debian's
# Chromium with apt when it is missing, and makes a venv with Playwright for Python from PyPI.
#
# browser_prerequisites   sets CHROMIUM (the browser) and BROWSER_PYTHON (a Python with
#                         Playwright), installing what is missing; Playwright's own browser
#                         downloads are never used (`playwright install` is not run)

browser_prerequisites() {
  local root requirements cache key venv
  if ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || return 1
  fi
  CHROMIUM=$(command -v chromium)
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  requirements=$root/tests/e2e/browser-requirements.txt
  cache=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
  key=$(sha256sum "$requirements" | cut -c1-12)
  venv=$cache/browser-venv-$key
  BROWSER_PYTHON=$venv/bin/python
  if [[ ! -x $BROWSER_PYTHON ]] || ! "$BROWSER_PYTHON" -c 'import playwright' 2>/dev/null; then
    mkdir -p "$cache"
    python3 -m venv "$venv" &&
      "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" || return 1
  fi
  export CHROMIUM BROWSER_PYTHON
}
