#!/usr/bin/env bash
# Operator scale: applies N MCPServers (default 500) to a real control plane (tests/control-plane.sh:
# etcd + kube-apiserver + kube-controller-manager on 127.0.0.1) and measures the time until every
# one is Accepted with its children (ConfigMap, Deployment, Service) created, the operator's RSS
# and CPU time, and the API requests the operator made per reconcile (from the API server's audit
# log, filtered to the operator's ServiceAccount). Writes bench/results/<date>-operator-scale.md.
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
"$CP" stop >/dev/null 2>&1 || true
"$CP" start
eval "$("$CP" env)"

log "CRD, namespaces, and a ServiceAccount for the operator"
"$OPERATOR_BIN" crd | kubectl apply -f - >/dev/null
kubectl wait --for=condition=Established crd/mcpservers.kube-mcp.io --timeout=60s >/dev/null
kubectl create namespace "$SYSTEM_NS" >/dev/null
kubectl create namespace "$NS" >/dev/null
kubectl -n "$SYSTEM_NS" create serviceaccount "$SA" >/dev/null
kubectl create clusterrolebinding mcp-operator-scale --clusterrole=cluster-admin \
  --serviceaccount="$SYSTEM_NS:$SA" >/dev/null
token=$(kubectl -n "$SYSTEM_NS" create token "$SA" --duration=1h)
server=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
cat >"$WORK/operator.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: scale, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: operator, user: {token: "$token"}}]
contexts: [{name: operator, context: {cluster: scale, user: operator}}]
current-context: operator
EOF

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

ADMIN_PORT=$((20000 + RANDOM % 10000))
KUBECONFIG=$WORK/operator.kubeconfig "$OPERATOR_BIN" run --leader-elect=false \
  --admin-listen "127.0.0.1:$ADMIN_PORT" --runtime-image ghcr.io/kube-mcp/kube-mcp:bench \
  --log-format json --log-level warn >"$WORK/operator.log" 2>&1 &
OPERATOR_PID=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
sleep 2 # the operator's watches are established

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$OPERATOR_PID/status"; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$OPERATOR_PID/stat"; }
audit_requests() { jq -r 'select(.stage == "ResponseComplete") | .auditID' "$WORK/audit.log" 2>/dev/null | sort -u | wc -l; }
accepted() {
  kubectl -n "$NS" get mcpservers -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Accepted")].status}{"\n"}{end}' | grep -c '^True$' || true
}
children() { kubectl -n "$NS" get "$1" -l app.kubernetes.io/managed-by=mcp-operator --no-headers 2>/dev/null | wc -l; }

RSS_IDLE=$(rss_kib)
CPU_IDLE=$(cpu_s)
REQ_IDLE=$(audit_requests)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "applying $N MCPServers"
start=$(date +%s.%N)
kubectl -n "$NS" apply -f "$WORK/servers.yaml" >/dev/null
applied=$(date +%s.%N)
peak=$RSS_IDLE
converged=
while :; do
  now=$(date +%s.%N)
  elapsed=$(awk -v a="$start" -v b="$now" 'BEGIN {printf "%.1f", b - a}')
  rss=$(rss_kib)
  ((rss > peak)) && peak=$rss
  a=$(accepted)
  if ((a == N)) && (($(children deployments) == N)) && (($(children configmaps) == N)) && (($(children services) == N)); then
    converged=$elapsed
    break
  fi
  if awk -v e="$elapsed" -v t="$TIMEOUT" 'BEGIN {exit !(e > t)}'; then
    log "not converged after ${TIMEOUT}s: $a Accepted"
    break
  fi
  sleep 1
done
sleep 5 # let requeues and status writes settle before counting
CPU_END=$(cpu_s)
REQ_END=$(audit_requests)
RSS_END=$(rss_kib)
((RSS_END > peak)) && peak=$RSS_END
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
reconciles=$(curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '/^mcp_operator_reconciles_total/ {s += $2} END {print s + 0}')
errors=$(curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '/^mcp_operator_reconcile_errors_total/ {s += $2} END {print s + 0}')
requests=$((REQ_END - REQ_IDLE))
by_verb=$(jq -r 'select(.stage == "ResponseComplete") | "\(.verb) \(.objectRef.resource // "-")"' "$WORK/audit.log" | sort | uniq -c | sort -rn | head -12 | awk '{printf "| %s | %s | %s |\n", $2, $3, $1}')
apply_s=$(awk -v a="$start" -v b="$applied" 'BEGIN {printf "%.1f", b - a}')

mkdir -p "$(dirname "$OUT")"
cat >"$OUT" <<EOF
# Operator scale: $N MCPServers on a real control plane

Run $(date -u '+%Y-%m-%d %H:%M UTC') on commit \`$(git rev-parse --short HEAD)\`; operator binary \`$OPERATOR_BIN\`.
Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB;
load average before $LOAD_BEFORE, after $LOAD_AFTER. The control plane (etcd, kube-apiserver,
kube-controller-manager from tests/control-plane.sh) runs on the same cores.

| figure | value |
|---|---|
| MCPServers applied (one \`kubectl apply\`) | $N (apply took ${apply_s} s) |
| time until all Accepted=True with ConfigMap, Deployment and Service | ${converged:-**not converged within ${TIMEOUT} s**} s (goal: < 60 s) |
| operator RSS idle / peak / after | $((RSS_IDLE / 1024)) / $((peak / 1024)) / $((RSS_END / 1024)) MiB |
| operator CPU time for the run | $(awk -v a="$CPU_IDLE" -v b="$CPU_END" 'BEGIN {printf "%.1f", b - a}') s |
| reconciles (errors) | $reconciles ($errors) |
| API requests by the operator | $requests |
| API requests per reconcile / per MCPServer | $(awk -v r="$requests" -v n="$reconciles" 'BEGIN {printf "%.1f", n ? r / n : 0}') / $(awk -v r="$requests" -v n="$N" 'BEGIN {printf "%.1f", r / n}') |

API requests by verb and resource (from the audit log; includes the watches opened at start):

| verb | resource | requests |
|---|---|---:|
$by_verb
EOF
cat "$OUT"
log "wrote $OUT"
