#!/usr/bin/env bash
# Operator scale: N MCPServers (default 1,000 and 5,000) of the realistic kind
# (examples/issue-tracker: 8 tools with schemas, HTTP backends, a Secret) on a real control plane
# (tests/control-plane.sh: etcd + kube-apiserver + kube-controller-manager on 127.0.0.1), with the
# pods played by bench/simulate-pods.py (Running, Ready, a loopback IP nothing listens on: every
# server is Ready and unverifiable, the verifier's worst case short of timeouts).
#
# For each N, on a fresh control plane, with the operator (release build, leader election on,
# --verify=pods) running as a ServiceAccount bound to cluster-admin:
#   - `kubectl apply` of the N servers while the operator runs; the clock of "converged" starts
#     when the apply has finished: every server Ready=True and Verified=False/Unreachable (the
#     verifier asked every pod), read from the server-side table (the printer columns);
#   - the operator's RSS idle before the apply, peak, and after; reconciles per server (its
#     metric); API requests and writes per server (the API server's audit log, filtered to the
#     operator's ServiceAccount; Lease renewals counted apart);
#   - requests in a 60 s idle window after convergence;
#   - a user's edit of one server: time until its ConfigMap has the new hash, while every
#     server is unverifiable;
#   - a forced leader change: a standby starts, the leader gets SIGTERM (it hands the Lease
#     over); the new leader's writes (goal: none), requests, RSS, and the time until it has
#     asked every Ready pod once.
# Writes bench/results/<date>-operator-scale.md.
#
# Usage: bench/operator-scale.sh
# Environment: SCALE_N ("1000 5000"), SCALE_TIMEOUT (1200 s per wait), SCALE_APPLY_STREAMS (4
# `kubectl apply` processes at once), MCP_OPERATOR_BIN (default:
# built from this workspace, release), KUBE_MCP_TEST_RUN (/tmp/kube-mcp-scale), BENCH_OUT,
# SCALE_LOG_LEVEL (the operators' --log-level, warn; info logs every status change).
# I/O: a control plane of its own under $KUBE_MCP_TEST_RUN, stopped on exit; two operator
# processes and the pod simulator, local, on 127.0.0.1, stopped by their PIDs.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
SIZES=(${SCALE_N:-1000 5000})
TIMEOUT=${SCALE_TIMEOUT:-1200}
DATE=$(date -u +%Y-%m-%d)
OUT=${BENCH_OUT:-bench/results/$DATE-operator-scale.md}
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-scale}
CP=$ROOT/tests/control-plane.sh
NS=bench-scale
SYSTEM_NS=kube-mcp-scale
SA=mcp-operator
LEASE=mcp-operator-bench
WORK=$ROOT/bench/results/tmp/operator-scale
log() { printf '[scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

OPERATOR_BIN=${MCP_OPERATOR_BIN:-}
if [[ -z $OPERATOR_BIN ]]; then
  log "building mcp-operator (release, nice)"
  nice cargo build --release --locked -p mcp-operator
  OPERATOR_BIN=$ROOT/target/release/mcp-operator
fi
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

rm -rf "$WORK" && mkdir -p "$WORK"
cat >"$WORK/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: ["system:serviceaccount:$SYSTEM_NS:$SA"]
  - level: None
EOF
export KUBE_MCP_TEST_APISERVER_ARGS="--audit-policy-file=$WORK/audit-policy.yaml --audit-log-path=$WORK/audit.log --audit-log-maxsize=4000"
# The Deployment and ReplicaSet controllers' default client limit (20 requests/s each) would make
# them, not the operator, the pace of thousands of new servers (measured: about 200 s for 1,000).
KCM_QPS=${SCALE_KCM_QPS:-100}
export KUBE_MCP_TEST_CONTROLLER_MANAGER_ARGS="--kube-api-qps=$KCM_QPS --kube-api-burst=$((KCM_QPS * 2))"

LEADER_PID=
STANDBY_PID=
PODS_PID=
cleanup() {
  local pid
  for pid in $LEADER_PID $STANDBY_PID $PODS_PID; do kill "$pid" 2>/dev/null || true; done
  "$CP" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The issue tracker example, renamed: N servers of about 7 KiB each.
# servers_yaml FIRST COUNT: the servers tracker-FIRST .. tracker-(FIRST+COUNT-1).
servers_yaml() {
  local first=$1 count=$2 i
  for i in $(seq "$first" $((first + count - 1))); do
    echo "---"
    sed -e "s/^  name: issue-tracker$/  name: tracker-$i/" -e '/^#/d' examples/issue-tracker/issue-tracker.yaml
  done
}

# One `kubectl apply` sends its objects one after another under kubectl's own request rate limit
# (5,000 servers took 13 minutes): the servers are split into APPLY_STREAMS files applied at once.
APPLY_STREAMS=${SCALE_APPLY_STREAMS:-4}

fresh_cluster() {
  "$CP" stop >/dev/null 2>&1 || true
  rm -f "$WORK"/audit*.log
  "$CP" start
  eval "$("$CP" env)"
  "$OPERATOR_BIN" crd | kubectl apply -f - >/dev/null
  for _ in $(seq 30); do
    kubectl wait --for=condition=Established crd/mcpservers.kube-mcp.io --timeout=60s >/dev/null 2>&1 && break
    sleep 1
  done
  kubectl create namespace "$SYSTEM_NS" >/dev/null
  kubectl create namespace "$NS" >/dev/null
  kubectl -n "$SYSTEM_NS" create serviceaccount "$SA" >/dev/null
  kubectl create clusterrolebinding mcp-operator-scale --clusterrole=cluster-admin \
    --serviceaccount="$SYSTEM_NS:$SA" >/dev/null
  "$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$WORK/operator.kubeconfig" 2h
}

# start_operator NAME PORT: starts an operator replica (a leader candidate); prints its PID.
start_operator() {
  KUBECONFIG=$WORK/operator.kubeconfig POD_NAMESPACE=$SYSTEM_NS POD_NAME=$1 \
    "$OPERATOR_BIN" run --lease-name "$LEASE" --admin-listen "127.0.0.1:$2" \
    --runtime-image ghcr.io/kube-mcp/kube-mcp:bench --log-format json --log-level "${SCALE_LOG_LEVEL:-warn}" \
    >>"$WORK/$1.log" 2>&1 &
  echo $!
}
wait_ready() { for _ in $(seq 150); do curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1; }
leads() { curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | grep -qx 'mcp_operator_leader 1'; }
metric() { curl -fsS "http://127.0.0.1:$1/metrics" | awk -v m="^$2" '$0 ~ m {s += $2} END {print s + 0}'; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }
mib() { echo $(($1 / 1024)); }

# Audit log figures for the operator's requests received at or after EPOCH (and before END).
audit() { # audit FROM [TO] -> "verb resource" lines
  jq -r --argjson from "$1" --argjson to "${2:-1e12}" 'select(.stage == "ResponseComplete")
    | (.requestReceivedTimestamp | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) as $t
    | select($t >= ($from | floor) and $t < $to) | "\(.verb) \(.objectRef.resource // "-")"' "$WORK"/audit*.log 2>/dev/null
}
writes_of() { grep -E '^(create|update|patch|delete|deletecollection) ' | grep -vc ' leases$' || true; }
leases_of() { grep -c ' leases$' || true; }
events_of() { grep -Ec '^create events$' || true; }
requests_of() { grep -vc ' leases$' || true; }

# The server-side table (printer columns: NAME READY VERIFIED ...): cheap even for thousands.
table() { kubectl -n "$NS" get mcpservers --no-headers 2>/dev/null; }
ready_unverifiable() { table | awk '$2 == "True" && $3 == "False" {n++} END {print n + 0}'; }

# wait_until SECONDS CMD...: polls every 2 s; tracks PEAK RSS of LEADER_PID.
wait_until() {
  local deadline=$((SECONDS + $1)) rss
  shift
  until "$@"; do
    rss=$(rss_kib "$LEADER_PID" 2>/dev/null || echo 0)
    ((rss > PEAK)) && PEAK=$rss
    ((SECONDS < deadline)) || return 1
    sleep 2
  done
}
converged() { (($(ready_unverifiable) == N)); }

run_size() {
  N=$1
  log "N=$N: fresh control plane"
  fresh_cluster
  local stream per=$(((N + APPLY_STREAMS - 1) / APPLY_STREAMS))
  rm -f "$WORK"/servers-*.yaml
  for ((stream = 0; stream < APPLY_STREAMS; stream++)); do
    local first=$((stream * per)) count=$per
    ((first + count > N)) && count=$((N - first))
    ((count > 0)) && servers_yaml "$first" "$count" >"$WORK/servers-$stream.yaml"
  done
  local api_server port_a port_b
  api_server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  KUBE_SERVER=$api_server KUBE_CA=$KUBE_MCP_TEST_RUN/pki/ca.crt KUBE_CERT=$KUBE_MCP_TEST_RUN/pki/admin.crt \
    KUBE_KEY=$KUBE_MCP_TEST_RUN/pki/admin.key python3 bench/simulate-pods.py "$NS" "$((16 + RANDOM % 200))" \
    2>>"$WORK/pods.log" &
  PODS_PID=$!
  port_a=$((20000 + RANDOM % 10000))
  port_b=$((port_a + 1))
  LEADER_PID=$(start_operator bench-a "$port_a")
  wait_ready "$port_a"
  for _ in $(seq 100); do leads "$port_a" && break; sleep 0.2; done
  sleep 2 # watches established
  local rss_idle t_apply apply_s t0 converge_s rss_end reconciles writes events requests leases
  rss_idle=$(rss_kib "$LEADER_PID")
  PEAK=$rss_idle
  t_apply=$(now)
  log "N=$N: kubectl apply ($APPLY_STREAMS at once)"
  local applies=()
  for file in "$WORK"/servers-*.yaml; do
    kubectl -n "$NS" apply -f "$file" >/dev/null &
    applies+=($!)
  done
  # The peak RSS is tracked during the apply too (the operator may lag behind it).
  applying() { local pid; for pid in "${applies[@]}"; do kill -0 "$pid" 2>/dev/null && return 1; done; return 0; }
  wait_until "$TIMEOUT" applying || true
  for pid in "${applies[@]}"; do wait "$pid"; done
  apply_s=$(since "$t_apply")
  t0=$(now)
  log "N=$N: applied in ${apply_s}s; waiting for every server Ready and Verified=False/Unreachable"
  if wait_until "$TIMEOUT" converged; then converge_s=$(since "$t0"); else converge_s="not within ${TIMEOUT}s ($(ready_unverifiable) of $N)"; fi
  # The operator's own part: its last child write of the phase, after the apply finished.
  local children_s
  children_s=$(jq -r 'select(.stage == "ResponseComplete" and .verb == "patch" and (.objectRef.resource | test("^(configmaps|deployments|services)$"))) | .requestReceivedTimestamp' "$WORK"/audit*.log |
    sort | tail -1 | xargs -I{} date -d {} +%s.%N | awk -v a="$t0" '{printf "%.1f", $1 - a}')
  sleep 5
  rss_end=$(rss_kib "$LEADER_PID")
  ((rss_end > PEAK)) && PEAK=$rss_end
  reconciles=$(metric "$port_a" mcp_operator_reconciles_total)
  audit "${t_apply%.*}" >"$WORK/apply-$N.txt"
  writes=$(writes_of <"$WORK/apply-$N.txt")
  events=$(events_of <"$WORK/apply-$N.txt")
  requests=$(requests_of <"$WORK/apply-$N.txt")
  log "N=$N: converged; 60 s idle window"
  local quiet_from quiet quiet_leases
  quiet_from=$(date +%s)
  sleep 60
  audit "$quiet_from" >"$WORK/idle-$N.txt"
  quiet=$(requests_of <"$WORK/idle-$N.txt")
  quiet_leases=$(leases_of <"$WORK/idle-$N.txt")

  log "N=$N: forced leader change"
  STANDBY_PID=$(start_operator bench-b "$port_b")
  wait_ready "$port_b"
  sleep 3
  local t_change takeover_s pods_ready probes_s b_from rss_b b_writes b_requests b_reconciles
  t_change=$(now)
  kill -TERM "$LEADER_PID"
  wait "$LEADER_PID" 2>/dev/null || true
  LEADER_PID=$STANDBY_PID
  STANDBY_PID=
  for _ in $(seq 300); do leads "$port_b" && break; sleep 0.1; done
  takeover_s=$(since "$t_change")
  b_from=$(date +%s)
  pods_ready=$(kubectl -n "$NS" get pods --no-headers 2>/dev/null | wc -l)
  # Every Ready pod asked once: the verifier's questions reach the number of pods.
  if wait_until 300 bash -c "(( \$(curl -fsS http://127.0.0.1:$port_b/metrics | awk '/^mcp_operator_verify_probes_total/ {s += \$2} END {print s + 0}') >= $pods_ready ))"; then
    probes_s=$(since "$t_change")
  else
    probes_s="not within 300 s"
  fi
  sleep 60
  rss_b=$(rss_kib "$LEADER_PID")
  audit "$b_from" >"$WORK/takeover-$N.txt"
  b_writes=$(writes_of <"$WORK/takeover-$N.txt")
  b_requests=$(requests_of <"$WORK/takeover-$N.txt")
  b_reconciles=$(metric "$port_b" mcp_operator_reconciles_total)

  log "N=$N: a user's edit while every server is unverifiable"
  local before edit_s
  before=$(kubectl -n "$NS" get configmap tracker-7-manifest -o jsonpath='{.metadata.annotations.kube-mcp\.io/declaration-hash}')
  local t_edit
  t_edit=$(now)
  kubectl -n "$NS" patch mcpserver tracker-7 --type=merge -p '{"spec": {"title": "Issue tracker (edited)"}}' >/dev/null
  edit_s="not within 30 s"
  for _ in $(seq 300); do
    if [[ $(kubectl -n "$NS" get configmap tracker-7-manifest -o jsonpath='{.metadata.annotations.kube-mcp\.io/declaration-hash}') != "$before" ]]; then
      edit_s=$(since "$t_edit")
      break
    fi
    sleep 0.1
  done

  printf -v "R_apply_$N" %s "$apply_s"
  printf -v "R_converge_$N" %s "$converge_s"
  printf -v "R_children_$N" %s "$children_s"
  printf -v "R_rss_$N" %s "$(mib "$rss_idle") / $(mib "$PEAK") / $(mib "$rss_end")"
  printf -v "R_reconciles_$N" %s "$(awk -v r="$reconciles" -v n="$N" 'BEGIN {printf "%.2f", r / n}') ($reconciles)"
  printf -v "R_writes_$N" %s "$(awk -v w="$writes" -v n="$N" 'BEGIN {printf "%.2f", w / n}') ($writes)"
  printf -v "R_objects_$N" %s "$(awk -v w="$((writes - events))" -v n="$N" 'BEGIN {printf "%.2f", w / n}') / $(awk -v w="$events" -v n="$N" 'BEGIN {printf "%.2f", w / n}')"
  printf -v "R_requests_$N" %s "$(awk -v w="$requests" -v n="$N" 'BEGIN {printf "%.2f", w / n}') ($requests)"
  printf -v "R_quiet_$N" %s "$quiet (plus $quiet_leases Lease requests)"
  printf -v "R_takeover_$N" %s "$takeover_s"
  printf -v "R_probes_$N" %s "$probes_s ($pods_ready pods)"
  printf -v "R_bwrites_$N" %s "$b_writes"
  printf -v "R_brequests_$N" %s "$b_requests ($(sort "$WORK/takeover-$N.txt" | grep -v ' leases$' | uniq -c | sort -rn | awk '{printf "%s%s %s x%s", sep, $2, $3, $1; sep=", "}'))"
  printf -v "R_breconciles_$N" %s "$b_reconciles"
  printf -v "R_rssb_$N" %s "$(mib "$rss_b")"
  printf -v "R_edit_$N" %s "$edit_s"
  sort "$WORK/apply-$N.txt" | uniq -c | sort -rn | head -14 | awk '{printf "| %s | %s | %s |\n", $2, $3, $1}' >"$WORK/verbs-$N.md"
  kill "$LEADER_PID" "$PODS_PID" 2>/dev/null || true
  wait "$LEADER_PID" 2>/dev/null || true
  LEADER_PID=
  PODS_PID=
}

for n in "${SIZES[@]}"; do run_size "$n"; done

row() { # row LABEL VAR
  local line="| $1 |" n var
  for n in "${SIZES[@]}"; do
    var="R_$2_$n"
    line+=" ${!var} |"
  done
  echo "$line"
}
header="| figure |"
rule="|---|"
for n in "${SIZES[@]}"; do header+=" $n MCPServers |"; rule+="---|"; done
mkdir -p "$(dirname "$OUT")"
{
  cat <<EOF
# Operator scale: $(IFS=', '; echo "${SIZES[*]}") MCPServers on a real control plane

Run $(date -u '+%Y-%m-%d %H:%M UTC') on commit \`$(git rev-parse --short HEAD)\`; operator binary \`$OPERATOR_BIN\`
(\`mcp-operator run\`, leader election on, \`--verify=pods\`, as a ServiceAccount bound to cluster-admin;
kube-controller-manager with \`--kube-api-qps=$KCM_QPS\`).
Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB,
shared with the control plane (etcd, kube-apiserver, kube-controller-manager) and the pod simulator;
each size starts a fresh control plane. Servers: \`examples/issue-tracker\` renamed (one replica
each); pods played by \`bench/simulate-pods.py\` (Ready, at loopback addresses nothing listens on:
every server ends \`Ready=True\`, \`Verified=False/Unreachable\`).

$header
$rule
$(row "\`kubectl apply\` of the servers took, s ($APPLY_STREAMS at once)" apply)
$(row "every server's ConfigMap, Deployment and Service written, s after the apply finished (the operator's own pace)" children)
$(row "converged after the apply finished, s (every server Ready and Verified=False/Unreachable; goal < 120)" converge)
$(row "operator RSS idle / peak / after, MiB (goal < 256)" rss)
$(row "reconciles per server (goal <= 1.2)" reconciles)
$(row "API writes per server, Lease renewals aside (goal <= 6)" writes)
$(row "of which: to objects (children, status) / Events, per server" objects)
$(row "API requests per server, Lease renewals aside" requests)
$(row "API requests in the 60 s after convergence (goal 0)" quiet)
$(row "leader change: standby leads after SIGTERM to the leader, s" takeover)
$(row "new leader: every Ready pod asked once after, s" probes)
$(row "new leader: writes in its first 60 s (goal 0)" bwrites)
$(row "new leader: requests in its first 60 s" brequests)
$(row "new leader: reconciles" breconciles)
$(row "new leader: RSS after 60 s, MiB" rssb)
$(row "a user's edit reaches its ConfigMap, s (all servers unverifiable; goal < 2)" edit)

Requests of the apply phase by verb and resource, per size (audit log):
EOF
  for n in "${SIZES[@]}"; do
    printf '\n%s servers:\n\n| verb | resource | requests |\n|---|---|---:|\n' "$n"
    cat "$WORK/verbs-$n.md"
  done
} >"$OUT"
cat "$OUT"
log "wrote $OUT"
