#!/usr/bin/env bash
# Operator scale: applies N MCPServers (default 500) to a real control plane (tests/control-plane.sh:
# etcd + kube-apiserver + kube-controller-manager on 127.0.0.1) and measures the time until every
# one is Accepted with its children (ConfigMap, Deployment, Service) created, the operator's RSS
# and CPU time, the reconciles, API requests and API writes the operator made per MCPServer (from
# the API server's audit log, filtered to the operator's ServiceAccount), and the requests it made
# in a 60 s window after convergence (a quiet operator makes none). Writes
# bench/results/<date>-operator-scale.md.
#
# Usage: bench/operator-scale.sh
# Environment: SCALE_N (500), SCALE_TIMEOUT (600 s), MCP_OPERATOR_BIN (default: built from this
# workspace's operator crate), KUBE_MCP_TEST_RUN (/tmp/kube-mcp-scale), BENCH_OUT.
# I/O: a control plane of its own under $KUBE_MCP_TEST_RUN, stopped on exit; the operator runs as a
# local process on 127.0.0.1, stopped by its PID.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
N=${SCALE_N:-500}
TIMEOUT=${SCALE_TIMEOUT:-600}
DATE=$(date -u +%Y-%m-%d)
OUT=${BENCH_OUT:-bench/results/$DATE-operator-scale.md}
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-scale}
CP=$ROOT/tests/control-plane.sh
NS=bench-scale
SYSTEM_NS=kube-mcp-scale
SA=mcp-operator
WORK=$ROOT/bench/results/tmp/operator-scale
log() { printf '[scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

OPERATOR_BIN=${MCP_OPERATOR_BIN:-}
if [[ -z $OPERATOR_BIN ]]; then
  if [[ ! -f operator/Cargo.toml ]]; then
    echo "no operator crate in this workspace: set MCP_OPERATOR_BIN to an mcp-operator binary" >&2
    exit 2
  fi
  log "building mcp-operator (release, nice)"
  nice cargo build --release --locked -p mcp-operator
  OPERATOR_BIN=$ROOT/target/release/mcp-operator
fi
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

rm -rf "$WORK" && mkdir -p "$WORK"
# Audit only the operator's requests: one event per completed request.
cat >"$WORK/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: ["system:serviceaccount:$SYSTEM_NS:$SA"]
  - level: None
EOF
export KUBE_MCP_TEST_APISERVER_ARGS="--audit-policy-file=$WORK/audit-policy.yaml --audit-log-path=$WORK/audit.log --audit-log-maxsize=1000"

OPERATOR_PID=
cleanup() {
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  "$CP" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "generating $N MCPServers"
for i in $(seq 0 $((N - 1))); do
  cat <<EOF
---
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: bench-$i}
spec:
  title: Bench server $i
  tools:
    - name: echo
      description: Echoes the message.
      inputSchema: {type: object, properties: {message: {type: string}}, required: [message]}
      content:
        - {type: text, text: "{{ args.message }}"}
  resources:
    - {uri: "bench://static/readme", name: readme, mimeType: text/plain, text: "Server $i."}
EOF
done >"$WORK/servers.yaml"

# A fresh control plane with the CRD, the namespaces and the operator's ServiceAccount.
fresh_cluster() {
  "$CP" stop >/dev/null 2>&1 || true
  rm -f "$WORK/audit.log"
  "$CP" start
  eval "$("$CP" env)"
  "$OPERATOR_BIN" crd | kubectl apply -f - >/dev/null
  # `kubectl wait` fails (not waits) while the new CRD has no conditions yet: retry.
  for _ in $(seq 30); do
    kubectl wait --for=condition=Established crd/mcpservers.kube-mcp.io --timeout=60s >/dev/null 2>&1 && break
    sleep 1
  done
  kubectl create namespace "$SYSTEM_NS" >/dev/null
  kubectl create namespace "$NS" >/dev/null
  kubectl -n "$SYSTEM_NS" create serviceaccount "$SA" >/dev/null
  kubectl create clusterrolebinding mcp-operator-scale --clusterrole=cluster-admin \
    --serviceaccount="$SYSTEM_NS:$SA" >/dev/null
  tests/control-plane.sh sa-kubeconfig "$SYSTEM_NS" "$SA" "$WORK/operator.kubeconfig" 1h
}

ADMIN_PORT=$((20000 + RANDOM % 10000))
start_operator() {
  KUBECONFIG=$WORK/operator.kubeconfig "$OPERATOR_BIN" run --leader-elect=false \
    --admin-listen "127.0.0.1:$ADMIN_PORT" --runtime-image ghcr.io/kube-mcp/kube-mcp:bench \
    --log-format json --log-level warn >>"$WORK/operator.log" 2>&1 &
  OPERATOR_PID=$!
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
}
stop_operator() {
  kill "$OPERATOR_PID" 2>/dev/null || true
  wait "$OPERATOR_PID" 2>/dev/null || true
  OPERATOR_PID=
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$OPERATOR_PID/status"; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$OPERATOR_PID/stat"; }
audit_requests() { jq -r 'select(.stage == "ResponseComplete") | .auditID' "$WORK/audit.log" 2>/dev/null | sort -u | wc -l; }
audit_writes() { jq -r 'select(.stage == "ResponseComplete" and (.verb | test("^(create|update|patch|delete)$"))) | .auditID' "$WORK/audit.log" 2>/dev/null | sort -u | wc -l; }
# requests_since EPOCH: requests the operator sent at or after EPOCH (a watch opened earlier and
# still open is not one).
requests_since() {
  jq -r --argjson t "$1" 'select(.stage == "ResponseComplete" and (.requestReceivedTimestamp | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) >= $t) | "\(.verb) \(.objectRef.resource // "-")"' "$WORK/audit.log" 2>/dev/null
}
# Servers with Accepted=True (jq, not a kubectl JSONPath filter: that fails on a server with no
# status yet).
accepted() {
  kubectl -n "$NS" get mcpservers -o json | jq '[.items[] | select(any(.status.conditions[]?; .type == "Accepted" and .status == "True"))] | length'
}
children() { kubectl -n "$NS" get "$1" -l app.kubernetes.io/managed-by=mcp-operator --no-headers 2>/dev/null | wc -l; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
metric() { curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="^$1" '$0 ~ m {s += $2} END {print s + 0}'; }

# wait_converged START: seconds from START until every MCPServer is Accepted with its children;
# tracks the operator's peak RSS in PEAK (a global: this runs in the current shell).
wait_converged() {
  local start=$1 elapsed rss
  while :; do
    elapsed=$(since "$start")
    rss=$(rss_kib)
    ((rss > PEAK)) && PEAK=$rss
    if (($(accepted) == N)) && (($(children deployments) == N)) && (($(children configmaps) == N)) && (($(children services) == N)); then
      CONVERGED=$elapsed
      return 0
    fi
    if awk -v e="$elapsed" -v t="$TIMEOUT" 'BEGIN {exit !(e > t)}'; then
      CONVERGED="not converged within ${TIMEOUT}"
      return 0
    fi
    sleep 1
  done
}

# phase NAME: measures one phase into the variables R_<figure>_NAME.
#   live: the operator runs while `kubectl apply` creates the N servers (what a user sees);
#   cold: the N servers exist before the operator starts (the operator's own pace).
phase() {
  local name=$1 start t0 rss_idle cpu_idle req_idle writes_idle rss_end reconciles requests writes quiet_from quiet load_before
  fresh_cluster
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  if [[ $name == live ]]; then
    start_operator
    sleep 2 # watches established
  else
    t0=$(date +%s.%N)
    kubectl -n "$NS" apply -f "$WORK/servers.yaml" >/dev/null
    printf -v "R_apply_$name" %s "$(since "$t0")"
    start_operator
  fi
  rss_idle=$(rss_kib)
  cpu_idle=$(cpu_s)
  req_idle=$(audit_requests)
  writes_idle=$(audit_writes)
  PEAK=$rss_idle
  start=$(date +%s.%N)
  if [[ $name == live ]]; then
    log "live: applying $N MCPServers while the operator runs"
    kubectl -n "$NS" apply -f "$WORK/servers.yaml" >/dev/null
    printf -v "R_apply_$name" %s "$(since "$start")"
  else
    log "cold: $N MCPServers exist; the operator starts"
  fi
  wait_converged "$start"
  printf -v "R_converged_$name" %s "$CONVERGED"
  sleep 5 # requeues and status writes settle before counting
  rss_end=$(rss_kib)
  ((rss_end > PEAK)) && PEAK=$rss_end
  reconciles=$(metric mcp_operator_reconciles_total)
  requests=$(($(audit_requests) - req_idle))
  writes=$(($(audit_writes) - writes_idle))
  log "$name: converged; watching the operator for 60 s"
  quiet_from=$(date +%s)
  sleep 60
  quiet=$(requests_since "$quiet_from" | wc -l)
  printf -v "R_quiet_$name" %s "$quiet$( ((quiet > 0)) && requests_since "$quiet_from" | sort | uniq -c | awk '{printf " (%s %s x%s)", $2, $3, $1}')"
  printf -v "R_writes_$name" %s "$writes ($(awk -v w="$writes" -v m="$N" 'BEGIN {printf "%.2f", w / m}') per MCPServer)"
  printf -v "R_recper_$name" %s "$(awk -v r="$reconciles" -v m="$N" 'BEGIN {printf "%.2f", r / m}')"
  printf -v "R_rss_$name" %s "$((rss_idle / 1024)) / $((PEAK / 1024)) / $((rss_end / 1024))"
  printf -v "R_cpu_$name" %s "$(awk -v a="$cpu_idle" -v b="$(cpu_s)" 'BEGIN {printf "%.1f", b - a}')"
  printf -v "R_reconciles_$name" %s "$reconciles ($(metric mcp_operator_reconcile_errors_total))"
  printf -v "R_requests_$name" %s "$requests"
  printf -v "R_per_$name" %s "$(awk -v r="$requests" -v n="$reconciles" -v m="$N" 'BEGIN {printf "%.1f / %.1f", n ? r / n : 0, r / m}')"
  printf -v "R_load_$name" %s "$load_before -> $(cut -d' ' -f1-3 /proc/loadavg)"
  jq -r 'select(.stage == "ResponseComplete") | "\(.verb) \(.objectRef.resource // "-")"' "$WORK/audit.log" |
    sort | uniq -c | sort -rn | head -12 | awk '{printf "| %s | %s | %s |\n", $2, $3, $1}' >"$WORK/verbs-$name.md"
  stop_operator
}

phase live
phase cold

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
# Operator scale: $N MCPServers on a real control plane

Run $(date -u '+%Y-%m-%d %H:%M UTC') on commit \`$(git rev-parse --short HEAD)\`; operator binary \`$OPERATOR_BIN\`
(\`mcp-operator run --leader-elect=false\`, as a ServiceAccount bound to cluster-admin).
Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB.
The control plane (etcd, kube-apiserver, kube-controller-manager from tests/control-plane.sh)
runs on the same 2 cores; each phase starts a fresh one.

- **live**: the operator runs while one \`kubectl apply -f\` creates the $N servers (what a user
  sees; the clock starts when the apply starts).
- **cold**: the $N servers exist before the operator starts (the operator's own pace; the clock
  starts when it is ready).

| figure | live | cold |
|---|---|---|
| \`kubectl apply\` of $N MCPServers took | ${R_apply_live} s (operator running) | ${R_apply_cold} s (no operator) |
| time until all Accepted=True with ConfigMap, Deployment and Service (goal < 30 s) | ${R_converged_live} s | ${R_converged_cold} s |
| operator RSS idle / peak / after, MiB | ${R_rss_live} | ${R_rss_cold} |
| operator CPU time, s | ${R_cpu_live} | ${R_cpu_cold} |
| reconciles (errors) | ${R_reconciles_live} | ${R_reconciles_cold} |
| API requests by the operator | ${R_requests_live} | ${R_requests_cold} |
| API requests per reconcile / per MCPServer | ${R_per_live} | ${R_per_cold} |
| reconciles per MCPServer (goal <= 3) | ${R_recper_live} | ${R_recper_cold} |
| API writes (create, update, patch, delete) (goal <= 6 per MCPServer) | ${R_writes_live} | ${R_writes_cold} |
| API requests in the 60 s after convergence (goal 0) | ${R_quiet_live} | ${R_quiet_cold} |
| load average before -> after | ${R_load_live} | ${R_load_cold} |

API requests of the live phase by verb and resource (audit log; includes the watches opened at start):

| verb | resource | requests |
|---|---|---:|
$(cat "$WORK/verbs-live.md")

Same for the cold phase:

| verb | resource | requests |
|---|---|---:|
$(cat "$WORK/verbs-cold.md")
EOF
cat "$OUT"
log "wrote $OUT"
