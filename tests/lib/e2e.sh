# tests/lib/e2e.sh: kubectl assertion helpers for cluster test scripts, on top of
# tests/lib/checks.sh (`check`, `eventually`); sourced, no I/O of its own beyond kubectl calls
# and the check log under $E2E.
#
# holds NS KIND/NAME... FILTER  the object's JSON satisfies the jq filter (prints it if not)
# absent NS KIND NAME      the object does not exist
# condition NS NAME TYPE   prints `STATUS REASON` of an MCPServer condition

# The caller sets E2E (its log directory) before the first check.
# shellcheck source=tests/lib/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
CHECK_LOG=${CHECK_LOG:-$E2E/last-check.log}

log() { printf '[%s %s] %s\n' "${E2E_NAME:-e2e}" "$(date +%H:%M:%S)" "$*" >&2; }

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
