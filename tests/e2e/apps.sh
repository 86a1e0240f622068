#!/usr/bin/env bash
# tests/e2e/apps.sh: an MCP Apps view rendered by a real host bridge in a real browser.
#
# mcp-runtime serves tests/e2e/apps/apps.yaml: a tool whose view shows the result the host sends
# it and fetches two https origins on 127.0.0.1, one declared in its `csp.connectDomains`, one
# not (https because the declaration accepts only literal https origins; the certificate is
# self-signed and the browser told to accept it). A host page built from the npm packages
# @modelcontextprotocol/ext-apps (AppBridge) and @modelcontextprotocol/client (tests/e2e/apps,
# from its lock file, bundled by esbuild) renders the view in a sandboxed iframe under the CSP
# from `_meta.ui.csp`; tests/e2e/apps_page.py drives Debian's Chromium with Playwright for Python
# and checks the result is shown, the declared fetch answered and the undeclared one blocked.
# No control plane.
#
# Usage: tests/e2e/apps.sh   (MCP_RUNTIME_BIN: a prebuilt binary; default builds target/debug)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: npm and apt (first run), artefacts under $KUBE_MCP_TEST_RUN/apps (default
# /tmp/kube-mcp-e2e/apps), mcp-runtime and tests/e2e/apps/servers.py on 127.0.0.1, both
# stopped by pid on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
E2E=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}/apps
E2E_NAME=apps
APPS=$ROOT/tests/e2e/apps
# shellcheck source=tests/lib/e2e.sh
source "$ROOT/tests/lib/e2e.sh"
# shellcheck source=tests/lib/runtime.sh
source "$ROOT/tests/lib/runtime.sh"
# shellcheck source=tests/lib/browser.sh
source "$ROOT/tests/lib/browser.sh"

SERVERS_PID=
cleanup() {
  local rc=$?
  runtime_stop
  if [[ -n $SERVERS_PID ]]; then
    kill "$SERVERS_PID" 2>/dev/null || true
    wait "$SERVERS_PID" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
rm -rf "$E2E"
mkdir -p "$E2E"

log "the host's npm packages, from the lock file, bundled for the browser"
if [[ ! -d $APPS/node_modules ]] || [[ $APPS/package-lock.json -nt $APPS/node_modules ]]; then
  (cd "$APPS" && npm ci --no-audit --no-fund --loglevel=error)
fi
"$APPS/node_modules/.bin/esbuild" "$APPS/host.js" --bundle --format=esm --platform=browser \
  --log-level=warning --outfile="$E2E/host.js"
cp "$APPS/host.html" "$E2E/"
log "a browser: Debian's Chromium and Playwright for Python"
browser_prerequisites
if [[ -z ${MCP_RUNTIME_BIN:-} ]]; then
  cargo build -q -p mcp-runtime
fi

ALLOWED=https://127.0.0.1:$(runtime_free_port)
DENIED=https://127.0.0.1:$(runtime_free_port)
HOST_PORT=$(runtime_free_port)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$E2E/key.pem" -out "$E2E/cert.pem" 2>/dev/null
sed -e "s|ALLOWED_ORIGIN|$ALLOWED|g" -e "s|DENIED_ORIGIN|$DENIED|g" "$APPS/apps.yaml" >"$E2E/apps.yaml"
RUNTIME_LOG=$E2E/runtime.log runtime_start "$E2E/apps.yaml"
python3 "$APPS/servers.py" "$E2E" "$HOST_PORT" "http://127.0.0.1:$RUNTIME_PORT/mcp" \
  "${ALLOWED##*:}" "${DENIED##*:}" "$E2E/cert.pem" "$E2E/key.pem" >"$E2E/servers.log" 2>&1 &
SERVERS_PID=$!
eventually 10 curl -fs -o /dev/null "http://127.0.0.1:$HOST_PORT/hits"

log "the view in Chromium (tests/e2e/apps_page.py)"
run_page_test() {
  APPS_HOST_URL=http://127.0.0.1:$HOST_PORT APPS_ALLOWED=$ALLOWED APPS_DENIED=$DENIED E2E=$E2E \
    "$BROWSER_PYTHON" "$ROOT/tests/e2e/apps_page.py"
}
check "the view shows the tool result, reaches its declared origin, is blocked by CSP elsewhere" run_page_test
check "the screenshot is written (a test artefact)" test -s "$E2E/apps.png"

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
