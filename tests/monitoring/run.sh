#!/usr/bin/env bash
# tests/monitoring/run.sh: the dashboards, alerts and monitors the chart ships, checked for real.
#
# - promtool (built from the github.com/prometheus/prometheus Go module, version pinned by
#   tests/monitoring/promql-check/go.mod) runs `check rules` and `test rules` (a unit test per alert);
# - the chart, rendered with every monitoring toggle on, passes server-side dry run on a real
#   control plane that has the Prometheus Operator CRDs (from their Go module);
# - a live mcp-runtime (with traffic: tool calls, an isError result, upstream calls, a request
#   forwarded to a second replica that owns its session) and a live
#   mcp-operator (reconciling on that control plane, including a failing reconcile) are scraped,
#   and promql-check parses every expression of the rules and dashboards with Prometheus' own
#   parser and fails on any metric or label they do not export.
#
# Usage: tests/monitoring/run.sh   Prints `ok - ...` / `not ok - ...`, ends with `N passed, N failed`.
# I/O: builds into $KUBE_MCP_TEST_CACHE; a control plane in $KUBE_MCP_TEST_RUN (default
# /tmp/kube-mcp-monitoring), an mcp-runtime, an mcp-operator and a Python HTTP server, all on
# 127.0.0.1 and all stopped on exit; logs in a temporary directory it names at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-monitoring}
CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
CP="$ROOT/tests/control-plane.sh"
MOD=$ROOT/tests/monitoring/promql-check
CHART=$ROOT/charts/kube-mcp
RULES=$CHART/monitoring/rules.yaml
# Outside the control plane's run dir, which `start` wipes; kept afterwards for its logs.
WORK=$(mktemp -d -t kube-mcp-monitoring.XXXXXX)
PROMETHEUS_OPERATOR_VERSION=v0.85.0 # the newest root module of prometheus-operator on the proxy
RECIPE=2                            # bump when the build below changes

source "$ROOT/tests/lib/checks.sh"
CHECK_LOG=$WORK/last-check.log

log() { printf '[monitoring %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

PIDS=()
cleanup() {
  local rc=$? pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$CP" stop >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

mkdir -p "$WORK"
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }

# ---------------------------------------------------------------------------------------------------
# Tools: promtool and promql-check from one Go module (so they share Prometheus' version), and the
# Prometheus Operator CRDs. Same Go environment as tests/control-plane.sh: caches under $CACHE.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/pkg/mod GOCACHE=$CACHE/go-build
export GOFLAGS="-p=2 -modcacherw -buildvcs=false"
unset GOBIN GOOS GOARCH
PROMETHEUS_VERSION=$(cd "$MOD" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
TOOLS=$CACHE/monitoring-prometheus-$PROMETHEUS_VERSION-operator-$PROMETHEUS_OPERATOR_VERSION-r$RECIPE
mkdir -p "$TOOLS"
exec 9>"$CACHE/.monitoring-build.lock"
flock 9
if [[ ! -x $TOOLS/promtool ]]; then
  log "building promtool $PROMETHEUS_VERSION (cold: several minutes on 2 cores)"
  # remove_all_sd leaves out the service-discovery plugins (cloud SDKs): rules need none of them,
  # and they are most of the build.
  (cd "$MOD" && nice -n 15 go build -tags remove_all_sd -trimpath -o "$TOOLS/.promtool" \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION#v}" \
    github.com/prometheus/prometheus/cmd/promtool) && mv "$TOOLS/.promtool" "$TOOLS/promtool"
fi
if [[ ! -f $TOOLS/crds/monitoring.coreos.com_prometheusrules.yaml ]]; then
  log "fetching the Prometheus Operator CRDs $PROMETHEUS_OPERATOR_VERSION"
  dir=$(cd "$MOD" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  mkdir -p "$TOOLS/.crds"
  for kind in podmonitors servicemonitors prometheusrules; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$TOOLS/.crds/"
  done
  rm -rf "$TOOLS/crds" && mv "$TOOLS/.crds" "$TOOLS/crds"
fi
# Our own checker: rebuilt every run (seconds, from Go's build cache).
(cd "$MOD" && nice -n 15 go build -trimpath -o "$TOOLS/promql-check" .)
exec 9>&-
PROMTOOL=$TOOLS/promtool
log "promtool: $("$PROMTOOL" --version 2>&1 | head -n1)"

# ---------------------------------------------------------------------------------------------------
log "alert rules: promtool"
check "promtool check rules accepts $(basename "$RULES")" "$PROMTOOL" check rules "$RULES"
check "promtool test rules: every alert fires (and stays quiet) as its unit tests say" \
  "$PROMTOOL" test rules tests/monitoring/rules.test.yaml
# The rule tests must be able to fail: with a threshold changed, an alert no longer fires.
rule_tests_can_fail() {
  local copy=$WORK/rules-copy
  mkdir -p "$copy/charts/kube-mcp/monitoring" "$copy/tests/monitoring"
  sed 's/> 0.05$/> 0.5/' "$RULES" >"$copy/charts/kube-mcp/monitoring/rules.yaml"
  cp tests/monitoring/rules.test.yaml "$copy/tests/monitoring/"
  ! "$PROMTOOL" test rules "$copy/tests/monitoring/rules.test.yaml" >"$WORK/rules-copy.log" 2>&1 &&
    grep -q MCPUpstreamServerErrors "$WORK/rules-copy.log"
}
check "promtool test rules fails when an alert's threshold changes" rule_tests_can_fail
every_alert_tested() {
  local alert missing=0
  for alert in $(sed -n 's/^[[:space:]]*- alert: //p' "$RULES"); do
    grep -q "^[[:space:]]*alertname: $alert\$" tests/monitoring/rules.test.yaml || {
      echo "no test expects $alert to fire"
      missing=1
    }
  done
  ((missing == 0))
}
check "every alert has a unit test where it fires" every_alert_tested

# ---------------------------------------------------------------------------------------------------
log "building mcp-runtime and mcp-operator"
cargo build --locked -p mcp-runtime -p mcp-operator >"$WORK/cargo.log" 2>&1 || {
  tail -n 30 "$WORK/cargo.log"
  exit 1
}

log "control plane with the Prometheus Operator CRDs"
"$CP" start
eval "$("$CP" env)"
kubectl apply --server-side -f "$TOOLS/crds/" >/dev/null
kubectl apply --server-side -f crds/ >/dev/null
# Right after creation a CRD has no conditions yet, which `kubectl wait` treats as an error.
eventually 60 kubectl wait --for condition=Established --timeout=5s crd --all >/dev/null 2>&1
for ns in kube-mcp-system demo quota; do
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
done

ALL_ON=(--set metrics.serviceMonitor.enabled=true --set metrics.podMonitor.enabled=true
  --set metrics.prometheusRule.enabled=true --set metrics.dashboards.enabled=true)
for values in "" "--set operator.watchNamespace=demo --set metrics.dashboards.namespace=default"; do
  # shellcheck disable=SC2086
  check "kubectl apply --dry-run=server accepts the chart with dashboards, rules and monitors ${values}" \
    bash -c "helm template --skip-tests kube-mcp '$CHART' -n kube-mcp-system ${ALL_ON[*]} $values | kubectl apply --dry-run=server -f -"
done
rendered_objects() {
  local kinds
  kinds=$(helm template kube-mcp "$CHART" -n kube-mcp-system "${ALL_ON[@]}" | sed -n 's/^kind: //p' | sort | tr '\n' ' ')
  echo "$kinds"
  [[ $kinds == *"ConfigMap ConfigMap "* && $kinds == *PodMonitor* && $kinds == *PrometheusRule* && $kinds == *ServiceMonitor* ]]
}
check "the chart renders two dashboard ConfigMaps, a PodMonitor, a PrometheusRule and a ServiceMonitor" rendered_objects
off_by_default() { ! helm template kube-mcp "$CHART" | grep -E '^kind: (PodMonitor|PrometheusRule|ServiceMonitor)$'; }
check "monitoring objects are off by default" off_by_default
# The rules as the API server stored them (what the Prometheus Operator would load).
helm template kube-mcp "$CHART" -n kube-mcp-system "${ALL_ON[@]}" --show-only templates/prometheusrule.yaml |
  kubectl create --dry-run=server -o jsonpath='{.spec}' -f - >"$WORK/rendered-rules.json"
check "promtool check rules accepts the chart's rendered PrometheusRule" "$PROMTOOL" check rules "$WORK/rendered-rules.json"

# ---------------------------------------------------------------------------------------------------
log "live mcp-runtime with traffic"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
mkdir -p "$WORK/upstream"
echo '{"ok": true}' >"$WORK/upstream/ok.json"
UPSTREAM_PORT=$(free_port)
python3 -m http.server "$UPSTREAM_PORT" --bind 127.0.0.1 --directory "$WORK/upstream" >"$WORK/upstream.log" 2>&1 &
PIDS+=($!)
sed "s|@UPSTREAM@|http://127.0.0.1:$UPSTREAM_PORT|" tests/monitoring/manifest.yaml >"$WORK/manifest.yaml"
RT_PORT=$(free_port)
RT_ADMIN=$(free_port)
# Tracing on, so the duration histograms carry trace exemplars for Prometheus' parser to read;
# the spans go to a closed port (the export fails quietly, the exemplars are the point here).
# A second replica (the same session key, both advertising their address) owns a legacy session
# that the first then forwards to it.
head -c 32 /dev/urandom >"$WORK/session.key"
PEER_PORT=$(free_port)
target/debug/mcp-runtime serve --manifest "$WORK/manifest.yaml" --listen "127.0.0.1:$RT_PORT" \
  --admin-listen "127.0.0.1:$RT_ADMIN" --otlp-endpoint "http://127.0.0.1:$(free_port)" \
  --session-key-file "$WORK/session.key" --advertise-address 127.0.0.1 >"$WORK/runtime.log" 2>&1 &
PIDS+=($!)
target/debug/mcp-runtime serve --manifest "$WORK/manifest.yaml" --listen "127.0.0.1:$PEER_PORT" \
  --admin-listen "127.0.0.1:$(free_port)" --session-key-file "$WORK/session.key" \
  --advertise-address 127.0.0.1 >"$WORK/peer.log" 2>&1 &
PIDS+=($!)
check "mcp-runtime is ready" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$RT_ADMIN/readyz"
eventually 10 curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/ok.json"

call_tool() {
  local name=$1 args=$2 caps=${3:-'{}'}
  curl -fsS --max-time 10 "http://127.0.0.1:$RT_PORT/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H "Mcp-Name: $name" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'"$name"'","arguments":'"$args"',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":'"$caps"',"io.modelcontextprotocol/clientInfo":{"name":"monitoring-test","version":"1"}}}}'
}
traffic() {
  call_tool greet '{"name":"Ada"}' | grep -q 'Hello, Ada!' &&
    call_tool refuse '{}' | grep -q '"isError":true' &&
    call_tool fetch '{"file":"ok.json"}' | grep -q 'ok' &&
    call_tool fetch '{"file":"missing.json"}' >/dev/null &&
    call_tool ask '{}' '{"elicitation":{}}' | grep -q '"resultType":"input_required"'
}
check "tool calls answer (declared, isError, upstream 200 and 404, a question)" traffic
scraped() { curl -fsS "http://127.0.0.1:$RT_ADMIN/metrics" | grep -E "$1"; }
check "the runtime counted the upstream 404" scraped '^mcp_upstream_requests_total\{tool="fetch",code="404"\} 1$'
check "the runtime counted the question" scraped '^mcp_input_requests_total\{kind="elicitation",outcome="asked"\} 1$'
forwarded() {
  local session
  session=$(curl -fsS --max-time 10 -D - -o /dev/null "http://127.0.0.1:$PEER_PORT/mcp" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"monitoring-test","version":"1"}}}' |
    tr -d '\r' | sed -n 's/^mcp-session-id: //Ip') &&
    curl -fsS --max-time 10 "http://127.0.0.1:$RT_PORT/mcp" -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $session" \
      -H 'MCP-Protocol-Version: 2025-11-25' -d '{"jsonrpc":"2.0","id":2,"method":"ping"}' | grep -q '"result"'
}
check "a legacy session's request reaches the replica owning it" eventually 10 forwarded
check "the runtime counted the forward" scraped '^mcp_session_forwards_total\{outcome="forwarded"\} 1$'

# ---------------------------------------------------------------------------------------------------
log "live mcp-operator: one server that reconciles, one whose Service a quota forbids"
OP_ADMIN=$(free_port)
POD_NAMESPACE=kube-mcp-system POD_NAME=monitoring-operator target/debug/mcp-operator run \
  --admin-listen "127.0.0.1:$OP_ADMIN" --lease-name kube-mcp-monitoring \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:monitoring >"$WORK/operator.log" 2>&1 &
PIDS+=($!)
check "mcp-operator is ready" eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$OP_ADMIN/readyz"
kubectl -n quota create quota no-services --hard=services=0 --dry-run=client -o yaml | kubectl apply -f - >/dev/null
# The quota admission only refuses once the quota controller has written the quota's status.
eventually 60 bash -c "[[ -n \$(kubectl -n quota get resourcequota no-services -o jsonpath='{.status.hard.services}') ]]"
kubectl -n demo apply -f examples/weather.yaml >/dev/null
kubectl -n quota apply -f examples/weather.yaml >/dev/null
op_scraped() { curl -fsS "http://127.0.0.1:$OP_ADMIN/metrics" | grep -E "$1"; }
check "the operator counted a successful reconcile" eventually 60 op_scraped '^mcp_operator_reconciles_total\{result="success"\} [1-9]'
check "the operator counted the refused Service as a reconcile error" eventually 60 op_scraped '^mcp_operator_reconcile_errors_total\{'
check "the operator timed each reconcile step" eventually 60 op_scraped '^mcp_operator_reconcile_step_duration_seconds_count\{step="(validate|build|apply|verify|status)"\} [1-9]'
for step in validate build apply verify status; do
  check "the operator timed the $step step" op_scraped "^mcp_operator_reconcile_step_duration_seconds_count\\{step=\"$step\"\\} [1-9]"
done

# ---------------------------------------------------------------------------------------------------
log "every dashboard and rule expression against the live metrics"
# The labels a Prometheus scrape adds: the PodMonitor's target labels and its relabeled `server`
# for the runtime; the ServiceMonitor's for the operator (which honors the operator's own labels).
RUNTIME_TARGET=job,instance,namespace,pod,container,endpoint,server
OPERATOR_TARGET=job,instance,namespace,pod,container,endpoint,service
promql_check() {
  local dashboards=() d
  for d in "$CHART"/monitoring/dashboards/*.json; do dashboards+=(-dashboard "$d"); done
  "$TOOLS/promql-check" -scrape "http://127.0.0.1:$RT_ADMIN/metrics|$RUNTIME_TARGET" \
    -scrape "http://127.0.0.1:$OP_ADMIN/metrics|$OPERATOR_TARGET" \
    -rules "$RULES" -rules "$WORK/rendered-rules.json" "${dashboards[@]}" | tee "$WORK/promql-check.log"
}
check "promql-check: every metric and label in the dashboards and rules is exported" promql_check
exemplars_parsed() { grep -E "^# exemplars http://127.0.0.1:$RT_ADMIN/metrics [1-9]" "$WORK/promql-check.log"; }
check "Prometheus' OpenMetrics parser reads the runtime's trace exemplars" exemplars_parsed
# The checker must be able to fail: a dashboard with an unknown label and an unknown metric.
sed -e 's/sum by (namespace, server) (rate(mcp_requests_total/sum by (namespace, servr) (rate(mcp_requests_total/' \
  -e 's/mcp_sessions_active/mcp_sessions_open/' "$CHART/monitoring/dashboards/kube-mcp-fleet.json" >"$WORK/broken.json"
broken_is_refused() {
  local out
  out=$("$TOOLS/promql-check" -scrape "http://127.0.0.1:$RT_ADMIN/metrics|$RUNTIME_TARGET" \
    -scrape "http://127.0.0.1:$OP_ADMIN/metrics|$OPERATOR_TARGET" -dashboard "$WORK/broken.json") && return 1
  echo "$out" | grep -F 'groups by "servr"' && echo "$out" | grep -F 'metric "mcp_sessions_open" is not exported'
}
check "promql-check refuses an unknown label and an unknown metric" broken_is_refused

log "logs: $WORK"
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
