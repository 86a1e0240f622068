# tests/lib/e2e.sh: assertion helpers for cluster test scripts (sourced; no I/O of its own
# beyond kubectl calls and the log file under $E2E).
#
# check NAME CMD...        runs one assertion, prints `ok - NAME` or `not ok - NAME` and the
#                          command's output; never stops the run (counts in PASSED / FAILED)
# eventually SECONDS CMD...  retries CMD every half second until it succeeds or time is up
# holds NS KIND/NAME... FILTER  the object's JSON satisfies the jq filter (prints it if not)
# absent NS KIND NAME      the object does not exist
# condition NS NAME TYPE   prints `STATUS REASON` of an MCPServer condition

PASSED=0
FAILED=0

log() { printf '[%s %s] %s\n' "${E2E_NAME:-e2e}" "$(date +%H:%M:%S)" "$*" >&2; }

check() {
  local name=$1
  shift
  if "$@" >"$E2E/last-check.log" 2>&1; then
    PASSED=$((PASSED + 1))
    echo "ok - $name"
  else
    FAILED=$((FAILED + 1))
    echo "not ok - $name"
    sed 's/^/    /' "$E2E/last-check.log" | tail -n 20
  fi
}

eventually() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || {
      "$@" || true
      return 1
    }
    sleep 0.5
  done
}

holds() {
  local namespace=$1 filter=${*: -1}
  local json
  json=$(kubectl -n "$namespace" get "${@:2:$#-2}" -o json) || return 1
  jq -e "$filter" <<<"$json" >/dev/null || {
    echo "filter failed: $filter"
    jq -c '.status // .spec // .metadata' <<<"$json" | cut -c1-2000
    return 1
  }
}

absent() { ! kubectl -n "$1" get "${@:2}" >/dev/null 2>&1; }

condition() {
  kubectl -n "$1" get mcpserver "$2" -o json |
    jq -r --arg t "$3" '.status.conditions[]? | select(.type == $t) | "\(.status) \(.reason)"'
}
