#!/usr/bin/env bash
# tests/e2e/run.sh: the operator end to end, on a real control plane (tests/control-plane.sh).
#
# One command: builds the binaries, starts a control plane of its own, lints and server-side
# dry-runs the chart, installs it with the real helm, runs the operator binary locally as the
# chart's ServiceAccount (a TokenRequest token, so the chart's RBAC is what is exercised), applies
# the examples as a user would, and checks children, owner references, field manager, status,
# events, pruning, garbage collection, refusals (API server and operator), leader election and
# shutdown, and that neither helm upgrade nor helm rollback lowers the CRD. It then serves the
# ConfigMap the operator wrote with mcp-runtime and talks to it with the official MCP Python SDK:
# manifest -> operator -> ConfigMap -> runtime -> answered tool call.
# `Verified` is checked by the Rust cluster tests (operator/tests/cluster/, `kube::Api`): real
# runtimes play a server's pods on loopback addresses, which the operator asks directly.
#
# Usage: tests/e2e/run.sh        (KEEP_CLUSTER=1 leaves the control plane running afterwards)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: a control plane in $KUBE_MCP_TEST_RUN (default /tmp/kube-mcp-e2e), logs under it, and two
# local processes (operator, runtime) on 127.0.0.1, all stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}
CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
CP="$ROOT/tests/control-plane.sh"
E2E=$KUBE_MCP_TEST_RUN/e2e
SYSTEM_NS=kube-mcp-system
NS=e2e-demo
RELEASE=kube-mcp
SA=kube-mcp
LEASE=kube-mcp-leader

source "$ROOT/tests/lib/checks.sh"
# shellcheck source=tests/lib/cluster.sh
source "$ROOT/tests/lib/cluster.sh"
CHECK_LOG=$E2E/last-check.log

log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# jq_true JSON_COMMAND... -- FILTER: the command's JSON satisfies the jq filter.
obj() { kubectl -n "$NS" get "$@" -o json --show-managed-fields; }
holds() {
  local filter=${*: -1}
  local json
  json=$(obj "${@:1:$#-1}") || return 1
  jq -e "$filter" <<<"$json" >/dev/null || {
    echo "filter failed: $filter"
    jq -c '.status // .metadata' <<<"$json" | cut -c1-2000
    return 1
  }
}
absent() { ! kubectl -n "$NS" get "$@" >/dev/null 2>&1; }

OPERATOR_PID=
RUNTIME_PID=
STANDBY_PID=
PROXY_PID=
PARTITIONED_PID=
cleanup() {
  local rc=$?
  [[ -n $PROXY_PID ]] && kill "$PROXY_PID" 2>/dev/null || true
  [[ -n $PARTITIONED_PID ]] && kill "$PARTITIONED_PID" 2>/dev/null || true
  [[ -n $STANDBY_PID ]] && kill "$STANDBY_PID" 2>/dev/null || true
  [[ -n $RUNTIME_PID ]] && kill "$RUNTIME_PID" 2>/dev/null || true
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  cluster_stop
  exit "$rc"
}

cluster_prerequisites

"$CP" start
trap cleanup EXIT
eval "$("$CP" env)"
mkdir -p "$E2E"
ADMIN_KUBECONFIG=$KUBECONFIG

# ----------------------------------------------------------------------------------------------
log "chart: lint, render, server-side dry run"
CHART=$ROOT/charts/kube-mcp
lint_clean() {
  helm lint --strict "$CHART" >"$E2E/lint.log" 2>&1 || { cat "$E2E/lint.log"; return 1; }
  cat "$E2E/lint.log"
  ! grep -E '^\[(WARNING|ERROR|INFO)\]' "$E2E/lint.log"
}
check "helm lint --strict is clean (no errors, warnings or notes)" lint_clean
check "values.schema.json rejects unknown keys" bash -c "! helm template x '$CHART' --set operator.replica=2 >/dev/null 2>&1"
kubectl create namespace "$SYSTEM_NS" >/dev/null
kubectl create namespace "$NS" >/dev/null
# The platform delegates the host the weather server is exposed on, with TLS (rule hostDelegation).
kubectl annotate namespace "$NS" kube-mcp.io/hosts=mcp.example.com >/dev/null
check "the removed values crds.install and crds.keep are refused" bash -c \
  "! helm template x '$CHART' --set crds.install=true >/dev/null 2>&1 && ! helm template x '$CHART' --set crds.keep=false >/dev/null 2>&1"
for values in "" "--set operator.watchNamespace=$NS" "--set crds.manage=false --set metrics.service.enabled=false"; do
  # shellcheck disable=SC2086
  check "kubectl apply --dry-run=server accepts every rendered object and the CRD ${values:-(defaults)}" \
    bash -c "helm template --include-crds --skip-tests $RELEASE '$CHART' -n $SYSTEM_NS $values | kubectl apply --dry-run=server -f -"
done
check "crds.manage=false: the operator may only read its CRDs" bash -c \
  "helm template $RELEASE '$CHART' -n $SYSTEM_NS --set crds.manage=false | grep -A5 'resourceNames: \[\"mcpservers.kube-mcp.io\", \"mcptoolsets.kube-mcp.io\", \"mcptoolsetgrants.kube-mcp.io\", \"mcpapprovals.kube-mcp.io\"\]' | grep -qx '    verbs: \[\"get\"\]'"

log "chart: install with helm"
CRD=crd/mcpservers.kube-mcp.io
# revision_and_version: the CRD's revision annotation and its resourceVersion.
revision_and_version() { kubectl get "$CRD" -o jsonpath='{.metadata.annotations.kube-mcp\.io/crd-revision} {.metadata.resourceVersion}'; }
crd_revision_is() { [[ $(revision_and_version) == "$1 "* ]]; }
SHIPPED_REVISION=$(sed -n 's/^    kube-mcp.io\/crd-revision: .\([0-9]*\).$/\1/p' "$CHART/crds/mcpservers.kube-mcp.io.yaml")
check "helm install succeeds" helm install "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e
check "the CRD is established" kubectl wait --for=condition=Established "$CRD" --timeout=60s
check "the CRD has the shipped revision (${SHIPPED_REVISION:-none found})" crd_revision_is "${SHIPPED_REVISION:-none}"
check "the CRD is not in the release (rollback and uninstall cannot touch it)" bash -c \
  "! helm get manifest $RELEASE -n $SYSTEM_NS | grep -q '^kind: CustomResourceDefinition'"

# ----------------------------------------------------------------------------------------------
log "the operator runs locally as the chart's ServiceAccount"
SA_KUBECONFIG=$E2E/operator.kubeconfig
"$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$SA_KUBECONFIG"
as_operator() { KUBECONFIG=$SA_KUBECONFIG "$@"; }
check "the token is the chart's ServiceAccount" bash -c \
  "KUBECONFIG='$SA_KUBECONFIG' kubectl auth whoami -o jsonpath='{.status.userInfo.username}' | grep -qx 'system:serviceaccount:$SYSTEM_NS:$SA'"
check "RBAC: the operator cannot read Secrets" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i get secrets -n $NS) == no && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i list secrets -A) == no ]]"
check "RBAC: the operator may read, patch and create its CRD, and no other" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i patch $CRD) == yes && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i create $CRD) == yes && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i get crd/httproutes.gateway.networking.k8s.io) == no && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i create crd) == no ]]"
check "RBAC: the operator cannot touch Pods or other namespaces' Leases" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i create pods -n $NS) == no && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i update leases -n default) == no ]]"
# `--subresource`: `services/proxy` alone would name a Service called "proxy".
check "RBAC: no API server proxy (the operator asks pods directly)" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i create services --subresource=proxy -n $NS) == no && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i get pods --subresource=proxy -n $NS) == no ]]"

ADMIN_PORT=$((20000 + RANDOM % 10000))
OPERATOR_SCOPE=()
# Short enough for the cluster tests to see StaleDeclaration soon, long enough for them to see
# Propagating first.
VERIFY_GRACE_S=30
# A replaced session key retires this soon, so the cluster tests see it go.
SESSION_KEY_OVERLAP_S=20
RUNTIME_IMAGE=ghcr.io/kube-mcp/kube-mcp:e2e
OPERATOR_EXTRA=()
start_operator() {
  KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=e2e-operator \
    "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name "$LEASE" \
    --verify-grace "${VERIFY_GRACE_S}s" --session-key-overlap "${SESSION_KEY_OVERLAP_S}s" \
    --runtime-image "$RUNTIME_IMAGE" --log-format json "${OPERATOR_SCOPE[@]}" "${OPERATOR_EXTRA[@]}" \
    --log-level info,mcp_operator=debug >>"$E2E/operator.log" 2>&1 &
  OPERATOR_PID=$!
}
start_operator
admin() { curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT$1"; }
check "operator /readyz answers" eventually 60 admin /readyz
check "operator holds the Lease" eventually 30 bash -c \
  "kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}' | grep -q '^e2e-operator_'"
check "operator /metrics reports leadership" eventually 10 bash -c "curl -fsS 'http://127.0.0.1:$ADMIN_PORT/metrics' | grep -q '^mcp_operator_leader 1'"

# ----------------------------------------------------------------------------------------------
log "apply the weather example as a user would"
check "kubectl apply examples/weather.yaml" kubectl -n "$NS" apply -f "$ROOT/examples/weather.yaml"
check "expose it: add spec.ingress" kubectl -n "$NS" patch mcpserver weather --type=merge -p \
  '{"spec": {"ingress": {"host": "mcp.example.com", "path": "/weather", "className": "nginx", "tls": {"secretName": "mcp-tls"}}}}'
generation() { kubectl -n "$NS" get mcpserver "$1" -o jsonpath='{.metadata.generation}'; }
observed() { holds mcpserver "$1" ".status.observedGeneration == $(generation "$1")"; }
check "status observes the generation" eventually 60 observed weather
check "Accepted=True, reason Compiled" holds mcpserver weather \
  '.status.conditions[] | select(.type == "Accepted") | .status == "True" and .reason == "Compiled"'
check "Ready=False with a reason and message (no kubelet: pods stay Pending)" eventually 30 holds mcpserver weather \
  '.status.conditions[] | select(.type == "Ready") | .status == "False" and .reason == "RollingOut" and (.message | test("of 2 replicas"))'
check "status url is the ingress URL" holds mcpserver weather '.status.url == "https://mcp.example.com/weather/mcp"'
EXPECTED_COUNTS=$(kubectl -n "$NS" get mcpserver weather -o json | jq -c '.spec | {tools: (.tools // [] | length), resources: (.resources // [] | length), resourceTemplates: (.resourceTemplates // [] | length), prompts: (.prompts // [] | length)}')
check "status counts what is declared ($EXPECTED_COUNTS)" holds mcpserver weather \
  ".status.counts == $EXPECTED_COUNTS and .status.replicas == 2 and .status.readyReplicas == 0"
check "kubectl explain reads the field docs" bash -c \
  "kubectl explain mcpservers.spec.containerResources | grep -q 'CPU and memory of the runtime container' && kubectl explain mcpservers.spec.tools.content | grep -q 'MCP content block'"
check "printer columns show Ready, Verified, URL and Tools" bash -c \
  "kubectl -n $NS get mcps weather | tee /dev/stderr | grep -E '^weather +False +Unknown +https://mcp.example.com/weather/mcp +$(jq .tools <<<"$EXPECTED_COUNTS") '"

UID_WEATHER=$(kubectl -n "$NS" get mcpserver weather -o jsonpath='{.metadata.uid}')
owned() {
  holds "$1" "$2" ".metadata.ownerReferences | length == 1 and .[0].uid == \"$UID_WEATHER\" and .[0].controller == true and .[0].kind == \"MCPServer\""
}
for child in "configmap weather-manifest" "deployment weather" "service weather" "ingress weather" \
  "poddisruptionbudget weather"; do
  # shellcheck disable=SC2086
  check "child $child exists, controlled by the MCPServer" eventually 30 owned $child
done
# The session key's name has a random part; the Deployment records it.
weather_key() { kubectl -n "$NS" get deployment weather -o jsonpath='{.metadata.annotations.kube-mcp\.io/session-key}'; }
WEATHER_KEY=$(weather_key)
check "the Deployment names its session key Secret ($WEATHER_KEY)" [ -n "$WEATHER_KEY" ]
check "the session key Secret is controlled by the MCPServer" owned secret "$WEATHER_KEY"
applied_by_operator() {
  holds "$1" "$2" '[.metadata.managedFields[] | select(.operation == "Apply")] | length == 1 and .[0].manager == "mcp-operator"'
}
for child in "configmap weather-manifest" "deployment weather" "service weather" "ingress weather" "poddisruptionbudget weather"; do
  # shellcheck disable=SC2086
  check "child $child is server-side applied by field manager mcp-operator" applied_by_operator $child
done
check "status is written by field manager mcp-operator" holds mcpserver weather \
  '[.metadata.managedFields[] | select(.subresource == "status")] | .[0].manager == "mcp-operator"'
session_key() {
  holds secret "$WEATHER_KEY" '.immutable == true' &&
    [[ $(kubectl -n "$NS" get secret "$WEATHER_KEY" -o jsonpath='{.data.key}' | base64 -d | wc -c) == 32 ]]
}
check "the session key is 32 random bytes, immutable" session_key
check "the ConfigMap holds the runtime manifest" holds configmap weather-manifest \
  '.data["manifest.yaml"] | test("kind: MCPServer") and test("name: weather") and (test("replicas") | not)'
check "the Deployment runs the runtime hardened, with the manifest and session key mounted, advertising its pod IP" holds deployment weather \
  '.spec.template.spec.containers[0] as $c | $c.args[0] == "serve" and ($c.args | index("--session-key-file")) and ($c.args[($c.args | index("--advertise-address")) + 1] == "$(KUBE_MCP_POD_IP)") and ([$c.env[] | select(.name == "KUBE_MCP_POD_IP") | .valueFrom.fieldRef.fieldPath] == ["status.podIP"]) and $c.securityContext.readOnlyRootFilesystem and $c.securityContext.runAsNonRoot and ($c.volumeMounts | map(.mountPath) | index("/etc/kube-mcp"))'
check "the Deployment controller made pods from it (Pending: no kubelet)" eventually 30 bash -c \
  "(( \$(kubectl -n $NS get pods -l kube-mcp.io/server=weather -o name | grep -c pod/) >= 2 ))"
check "the Ingress routes only the MCP endpoints, SSE-safe" holds ingress weather \
  '([.spec.rules[0].http.paths[] | .path + " " + .pathType] == ["/weather/mcp Exact", "/weather/sse Exact", "/weather/messages Exact"]) and (.metadata.annotations["nginx.ingress.kubernetes.io/rewrite-target"] == null) and .metadata.annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"'
events_with() { kubectl -n "$NS" get events --field-selector "involvedObject.name=weather" -o json | jq -e "[.items[] | select(.reason == \"$1\")] | length > 0" >/dev/null; }
check "an event records the acceptance" eventually 20 events_with Compiled

# ----------------------------------------------------------------------------------------------
log "a steady server: reconciles without a transition change nothing, drift is put back"
ready_reason() { kubectl -n "$NS" get mcpserver weather -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'; }
condition_times() { kubectl -n "$NS" get mcpserver weather -o json | jq -c '[.status.conditions[] | {type, reason, lastTransitionTime}]'; }
server_events() {
  kubectl -n "$NS" get events --field-selector involvedObject.kind=MCPServer,involvedObject.name=weather -o json |
    jq -c '[.items[] | {reason, count: (.count // 1), series: (.series.count // 0)}] | sort_by(.reason)'
}
reconciles() { curl -fsS "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '/^mcp_operator_reconciles_total/ {s += $2} END {print s + 0}'; }
eventually 30 bash -c "[[ \$(kubectl -n $NS get mcpserver weather -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}') == RollingOut ]]" || true
sleep 3
TIMES_BEFORE=$(condition_times)
EVENTS_BEFORE=$(server_events)
RECONCILES_BEFORE=$(reconciles)
kubectl -n "$NS" patch service weather --type=json -p '[{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 9999}]' >/dev/null
kubectl -n "$NS" label configmap weather-manifest e2e-touched=1 >/dev/null
check "a Service edited by hand is put back" eventually 30 holds service weather '.spec.ports[0].targetPort == "http"'
sleep 4
check "the edits were reconciled ($RECONCILES_BEFORE reconciles before, $(reconciles) after)" test "$(reconciles)" -gt "$RECONCILES_BEFORE"
same_times() {
  local now
  now=$(condition_times)
  echo "before: $TIMES_BEFORE"
  echo "after:  $now"
  [[ $now == "$TIMES_BEFORE" ]]
}
check "lastTransitionTime unchanged across reconciles without a transition" same_times
no_new_events() {
  local now
  now=$(server_events)
  echo "before: $EVENTS_BEFORE"
  echo "after:  $now"
  [[ $now == "$EVENTS_BEFORE" ]] && jq -e 'all(.count == 1 and .series == 0) and (map(.reason) | length == (unique | length))' <<<"$now"
}
check "no duplicate Events for a steady server" no_new_events

log "pods that cannot start say why (pod status driven by hand: no kubelet)"
PODS=($(kubectl -n "$NS" get pods -l kube-mcp.io/server=weather -o jsonpath='{.items[*].metadata.name}'))
waiting_pod() {
  kubectl -n "$NS" patch pod "$1" --subresource=status --type=merge -p "{\"status\": {\"containerStatuses\": [{\"name\": \"mcp-runtime\", \"image\": \"ghcr.io/kube-mcp/kube-mcp:e2e\", \"imageID\": \"\", \"ready\": false, \"restartCount\": 0, \"state\": {\"waiting\": {\"reason\": \"$2\", \"message\": \"$3\"}}}]}}" >/dev/null
}
ready_is() { holds mcpserver weather ".status.conditions[] | select(.type == \"Ready\") | .status == \"False\" and .reason == \"$1\" and (.message | contains(\"$2\"))"; }
check "the weather pods exist (${#PODS[@]})" test "${#PODS[@]}" -ge 1
waiting_pod "${PODS[0]}" ImagePullBackOff 'Back-off pulling image \"ghcr.io/kube-mcp/kube-mcp:e2e\"'
check "a failing image gives Ready=False ImagePullBackOff with the kubelet's message" eventually 30 ready_is ImagePullBackOff 'Back-off pulling image'
waiting_pod "${PODS[0]}" CreateContainerConfigError 'secret \"upstream-token\" not found'
check "a missing Secret gives Ready=False CreateContainerConfigError naming it" eventually 30 ready_is CreateContainerConfigError 'secret \"upstream-token\" not found'
waiting_pod "${PODS[0]}" ContainerCreating ''
check "and back to RollingOut once the pod no longer names a problem" eventually 30 ready_is RollingOut 'of 2 replicas available; the Deployment is rolling out'
check "a Warning event names each reason" bash -c "kubectl -n $NS get events --field-selector involvedObject.kind=MCPServer,involvedObject.name=weather -o json | jq -e '[.items[] | select(.type == \"Warning\") | .reason] | index(\"ImagePullBackOff\") and index(\"CreateContainerConfigError\")'"

log "a same-named object someone else created is refused, not adopted"
kubectl -n "$NS" create service clusterip clash --tcp=80:8080 >/dev/null
foreign() { kubectl -n "$NS" get service clash -o json --show-managed-fields | jq -c '{selector: .spec.selector, owners: .metadata.ownerReferences, version: .metadata.resourceVersion, managers: [.metadata.managedFields[].manager]}'; }
CLASH_BEFORE=$(foreign)
kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: clash}
spec:
  tools: [{name: hi, content: [{type: text, text: hi}]}]
EOF
check "Ready=False, reason ChildConflict, naming the Service" eventually 30 holds mcpserver clash \
  '.status.conditions[] | select(.type == "Ready") | .status == "False" and .reason == "ChildConflict" and (.message | test("Service/clash exists"))'
untouched_foreign() {
  local now
  now=$(foreign)
  echo "before: $CLASH_BEFORE"
  echo "after:  $now"
  [[ $now == "$CLASH_BEFORE" ]]
}
check "the foreign Service is untouched" untouched_foreign
check "nothing else is written for the refused server" bash -c "! kubectl -n $NS get deployment clash && ! kubectl -n $NS get configmap clash-manifest"
kubectl -n "$NS" delete mcpserver clash --wait=true >/dev/null
kubectl -n "$NS" delete service clash >/dev/null

# ----------------------------------------------------------------------------------------------
log "a declaration change reaches the ConfigMap, not the pod template"
TEMPLATE_BEFORE=$(kubectl -n "$NS" get deployment weather -o jsonpath='{.spec.template}')
DEPLOY_GEN_BEFORE=$(kubectl -n "$NS" get deployment weather -o jsonpath='{.metadata.generation}')
check "patch a tool's reply" kubectl -n "$NS" patch mcpserver weather --type=json \
  -p '[{"op": "replace", "path": "/spec/tools/0/content/0/text", "value": "Hi, {{ args.name }}!"}]'
check "the ConfigMap follows" eventually 30 holds configmap weather-manifest '.data["manifest.yaml"] | test("Hi, [{][{] args.name [}][}]!")'
check "status observes the new generation" eventually 30 observed weather
same_pods() {
  [[ $(kubectl -n "$NS" get deployment weather -o jsonpath='{.spec.template}') == "$TEMPLATE_BEFORE" ]] &&
    [[ $(kubectl -n "$NS" get deployment weather -o jsonpath='{.metadata.generation}') == "$DEPLOY_GEN_BEFORE" ]]
}
check "the pod template did not change (no rollout)" same_pods

log "the runtime serves what the operator wrote"
kubectl -n "$NS" get configmap weather-manifest -o jsonpath='{.data.manifest\.yaml}' >"$E2E/manifest.yaml"
RT_PORT=$((ADMIN_PORT + 1))
"$RUNTIME_BIN" serve --manifest "$E2E/manifest.yaml" --listen "127.0.0.1:$RT_PORT" \
  --admin-listen "127.0.0.1:$((RT_PORT + 1))" >"$E2E/runtime.log" 2>&1 &
RUNTIME_PID=$!
check "mcp-runtime serves the ConfigMap's manifest" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$((RT_PORT + 1))/readyz"
# The project's one Python venv (tests/lib/python-venv.sh).
source "$ROOT/tests/lib/python-venv.sh"
log "preparing the Python venv"
python_venv
check "the official MCP Python SDK gets the patched answer" \
  timeout 120 "$PYTHON" "$ROOT/tests/e2e/mcp_client_check.py" "http://127.0.0.1:$RT_PORT/mcp" Hi
kill "$RUNTIME_PID" 2>/dev/null || true
wait "$RUNTIME_PID" 2>/dev/null || true
RUNTIME_PID=

# ----------------------------------------------------------------------------------------------
log "cluster tests in Rust (operator/tests/cluster): Verified end to end, why pods do not start"
cluster_tests() {
  KUBECONFIG=$ADMIN_KUBECONFIG KUBE_MCP_E2E_NAMESPACE=$NS KUBE_MCP_E2E_OPERATOR_NAMESPACE=$SYSTEM_NS \
    KUBE_MCP_E2E_OPERATOR_ADMIN=127.0.0.1:$ADMIN_PORT KUBE_MCP_E2E_DIR=$E2E/cluster \
    KUBE_MCP_E2E_VERIFY_GRACE_S=$VERIFY_GRACE_S KUBE_MCP_E2E_SESSION_KEY_OVERLAP_S=$SESSION_KEY_OVERLAP_S \
    MCP_RUNTIME_BIN=$RUNTIME_BIN \
    nice cargo test --quiet --manifest-path "$ROOT/Cargo.toml" -p mcp-operator --test cluster \
    -- --ignored --test-threads=1 --skip exposed:: --skip fleet::
}
check "operator/tests/cluster passes" cluster_tests

# ----------------------------------------------------------------------------------------------
log "a fleet upgrade rolls at most --max-concurrent-rollouts servers at once"
FLEET_SIZE=200
MAX_ROLLOUTS=20
fleet_test() {
  KUBECONFIG=$ADMIN_KUBECONFIG KUBE_MCP_E2E_NAMESPACE=$NS KUBE_MCP_E2E_OPERATOR_NAMESPACE=$SYSTEM_NS \
    KUBE_MCP_E2E_OPERATOR_ADMIN=127.0.0.1:$ADMIN_PORT KUBE_MCP_E2E_DIR=$E2E/cluster \
    KUBE_MCP_E2E_VERIFY_GRACE_S=$VERIFY_GRACE_S MCP_RUNTIME_BIN=$RUNTIME_BIN \
    KUBE_MCP_E2E_FLEET_SIZE=$FLEET_SIZE KUBE_MCP_E2E_FLEET_IMAGE=ghcr.io/kube-mcp/kube-mcp:e2e-next \
    KUBE_MCP_E2E_MAX_ROLLOUTS=$MAX_ROLLOUTS \
    nice cargo test --quiet --manifest-path "$ROOT/Cargo.toml" -p mcp-operator --test cluster \
    -- --ignored --exact --nocapture "fleet::$1"
}
restart_operator() {
  kill -TERM "$OPERATOR_PID" 2>/dev/null || true
  wait "$OPERATOR_PID" 2>/dev/null || true
  start_operator
  eventually 60 admin /readyz
}
check "a fleet of $FLEET_SIZE servers comes up, every pod Ready" fleet_test a_fleet_comes_up
RUNTIME_IMAGE=ghcr.io/kube-mcp/kube-mcp:e2e-next
OPERATOR_EXTRA=(--max-concurrent-rollouts "$MAX_ROLLOUTS")
check "the operator restarts with a new runtime image and --max-concurrent-rollouts $MAX_ROLLOUTS" restart_operator
check "the fleet reaches the new image, never more than $MAX_ROLLOUTS rolling at once" \
  fleet_test an_upgrade_rolls_at_most_the_limit_at_once
grep -h '^fleet upgrade:' "$CHECK_LOG" >&2 || true
RUNTIME_IMAGE=ghcr.io/kube-mcp/kube-mcp:e2e
OPERATOR_EXTRA=()
check "the operator restarts with the usual runtime image" restart_operator

# ----------------------------------------------------------------------------------------------
log "a refused declaration leaves the last good children serving"
CM_RV=$(kubectl -n "$NS" get configmap weather-manifest -o jsonpath='{.metadata.resourceVersion}')
TEMPLATE_BEFORE=$(kubectl -n "$NS" get deployment weather -o jsonpath='{.spec.template}')
check "patch in a broken template (valid for the schema)" kubectl -n "$NS" patch mcpserver weather --type=json \
  -p '[{"op": "replace", "path": "/spec/tools/0/content/0/text", "value": "Hi, {{ args.name "}]'
check "Accepted=False names the culprit" eventually 30 holds mcpserver weather \
  '.status.conditions[] | select(.type == "Accepted") | .status == "False" and .reason == "InvalidDeclaration" and (.message | startswith("spec.tools[0].content[0].text (tool `greet`): "))'
check "status observes the refused generation" observed weather
check "counts and url still describe what serves" holds mcpserver weather \
  ".status.counts == $EXPECTED_COUNTS and .status.url == \"https://mcp.example.com/weather/mcp\""
untouched() {
  [[ $(kubectl -n "$NS" get configmap weather-manifest -o jsonpath='{.metadata.resourceVersion}') == "$CM_RV" ]] &&
    [[ $(kubectl -n "$NS" get deployment weather -o jsonpath='{.spec.template}') == "$TEMPLATE_BEFORE" ]]
}
check "the ConfigMap and the Deployment are untouched" untouched
check "the ConfigMap still holds the last good manifest" holds configmap weather-manifest '.data["manifest.yaml"] | test("Hi, [{][{] args.name [}][}]!")'
check "a Warning event names the refusal" eventually 20 events_with InvalidDeclaration
check "fixing it accepts it again" kubectl -n "$NS" patch mcpserver weather --type=json \
  -p '[{"op": "replace", "path": "/spec/tools/0/content/0/text", "value": "Hi again, {{ args.name }}!"}]'
check "Accepted=True again" eventually 30 holds mcpserver weather \
  '.status.conditions[] | select(.type == "Accepted") | .status == "True"'
check "and the ConfigMap follows" eventually 30 bash -c \
  "kubectl -n $NS get configmap weather-manifest -o jsonpath='{.data.manifest\\.yaml}' | grep -qF 'Hi again, {{ args.name }}!'"

# ----------------------------------------------------------------------------------------------
# Late in the run on purpose: --public-url changes the pod template, and without a kubelet the
# rollout it starts never finishes, which would hide the pod-driven reasons checked above.
log "spec.auth: the public URL, the metadata route, the printer column"
check "add spec.auth" kubectl -n "$NS" patch mcpserver weather --type=merge -p \
  '{"spec": {"auth": {"issuer": "https://idp.example.com/realms/acme", "requiredScopes": ["mcp"]}}}'
check "the rendered config carries spec.auth" eventually 30 holds configmap weather-manifest \
  '.data["manifest.yaml"] | test("issuer: https://idp.example.com/realms/acme")'
check "the runtime gets --public-url from the Ingress, prefix included" eventually 30 holds deployment weather \
  '.spec.template.spec.containers[0].args as $a | ($a | index("--public-url")) as $i | $i != null and $a[$i + 1] == "https://mcp.example.com/weather"'
check "the Ingress routes the resource metadata of the prefixed URL, exactly" eventually 30 holds ingress weather \
  '[.spec.rules[0].http.paths[] | .path + " " + .pathType][3:] == ["/.well-known/oauth-protected-resource/weather Exact", "/.well-known/oauth-protected-resource/weather/mcp Exact", "/.well-known/oauth-protected-resource/weather/sse Exact"]'
check "kubectl get shows the issuer" bash -c "kubectl -n $NS get mcpserver weather | grep -q 'https://idp.example.com/realms/acme'"
check "remove spec.auth" kubectl -n "$NS" patch mcpserver weather --type=json -p '[{"op": "remove", "path": "/spec/auth"}]'
check "the Ingress routes the MCP endpoints only again" eventually 30 holds ingress weather '.spec.rules[0].http.paths | length == 3'

# ----------------------------------------------------------------------------------------------
log "what the spec drops is pruned"
check "remove the ingress" kubectl -n "$NS" patch mcpserver weather --type=json -p '[{"op": "remove", "path": "/spec/ingress"}]'
check "the Ingress is pruned" eventually 30 absent ingress weather
check "status url falls back to the Service" eventually 30 holds mcpserver weather \
  ".status.url == \"http://weather.$NS.svc.cluster.local/mcp\""
check "a Pruned event says so" eventually 20 events_with Pruned
check "one replica" kubectl -n "$NS" patch mcpserver weather --type=merge -p '{"spec": {"replicas": 1}}'
check "the PodDisruptionBudget is pruned" eventually 30 absent poddisruptionbudget weather

# ----------------------------------------------------------------------------------------------
log "spec.limits: each replica reads its share, and a scale re-divides"
check "a server declaring limits, with 2 replicas" bash -c "kubectl -n $NS apply --server-side -f - >/dev/null <<'YAML'
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: limited}
spec:
  replicas: 2
  limits:
    server: {rate: 100/s, burst: 200}
    perPrincipal: {quota: 5000/day}
  tools:
    - {name: hi, content: [{type: text, text: hi}]}
YAML"
check "status.limits: 2 replicas, half of each limit" eventually 30 holds mcpserver limited \
  '.status.limits.replicas == 2 and .status.limits.perReplica.server == {rate: "50/s", burst: 100} and .status.limits.perReplica.perPrincipal.quota == "2500/day"'
check "the pods' manifest holds the shares" eventually 30 holds configmap limited-manifest \
  '.data["manifest.yaml"] | test("rate: 50/s") and test("burst: 100") and test("quota: 2500/day")'
check "kubectl scale to 3" kubectl -n "$NS" scale mcpserver limited --replicas=3
check "status.limits: a third of each, rounded down" eventually 30 holds mcpserver limited \
  '.status.limits.replicas == 3 and .status.limits.perReplica.server == {rate: "2000/min", burst: 66} and .status.limits.perReplica.perPrincipal.quota == "1666/day"'
check "the pods' manifest was rewritten with them" eventually 30 holds configmap limited-manifest \
  '.data["manifest.yaml"] | test("rate: 2000/min") and test("burst: 66") and test("quota: 1666/day")'
check "the spec keeps the declared limits" holds mcpserver limited '.spec.limits.server == {rate: "100/s", burst: 200}'
kubectl -n "$NS" delete mcpserver limited --wait=false >/dev/null

# ----------------------------------------------------------------------------------------------
log "every example is accepted"
kubectl create namespace e2e-examples >/dev/null
for file in "$ROOT"/examples/*.yaml; do
  # The MCPServer of the file (examples/toolsets.yaml also holds the MCPToolSets it includes).
  name=$(kubectl create --dry-run=client -o json -f "$file" |
    jq -r 'if .kind == "List" then .items[] else . end | select(.kind == "MCPServer") | .metadata.name')
  check "examples/$(basename "$file"): applied" kubectl -n e2e-examples apply -f "$file"
  check "examples/$(basename "$file"): Accepted=True" eventually 30 bash -c \
    "kubectl -n e2e-examples get mcpserver $name -o json | jq -e '.status.conditions[] | select(.type == \"Accepted\") | .status == \"True\"' >/dev/null"
done

check "examples/toolsets.yaml: the server's status names both sets" eventually 30 bash -c \
  "kubectl -n e2e-examples get mcpserver inventory -o json | jq -e '[.status.toolSets[].name] == [\"inventory-hosts\", \"inventory-racks\"]' >/dev/null"
check "examples/cluster-views.yaml: the Ingress routes each view's endpoints and metadata" \
  eventually 30 bash -c "kubectl -n e2e-examples get ingress cluster -o json | jq -e '[.spec.rules[0].http.paths[] | select(.pathType == \"Exact\") | .path] as \$p | all(\"/cluster/mcp\", \"/cluster/readers/mcp\", \"/cluster/readers/sse\", \"/cluster/readers/messages\", \"/cluster/operators/mcp\", \"/.well-known/oauth-protected-resource/cluster/readers\"; . as \$x | \$p | index(\$x))' >/dev/null"

# ----------------------------------------------------------------------------------------------
# shellcheck source=tests/e2e/big-apis.sh
source "$ROOT/tests/e2e/big-apis.sh"

# ----------------------------------------------------------------------------------------------
log "invalid manifests are refused"
for file in "$ROOT"/tests/e2e/invalid/*.yaml; do
  name=$(basename "$file" .yaml)
  expect=$(sed -n 's/^# expect: //p' "$file")
  accepted_false=$(sed -n 's/^# accepted-false: //p' "$file")
  if [[ -n $expect ]]; then
    check "API server refuses $name: $expect" bash -c \
      "! kubectl -n $NS apply -f '$file' 2>'$E2E/$name.err'; grep -F -- '$expect' '$E2E/$name.err' || { cat '$E2E/$name.err'; false; }"
  else
    check "API server accepts $name" kubectl -n "$NS" apply -f "$file"
    check "$name: Accepted=False names $accepted_false" eventually 30 holds mcpserver "$name" \
      ".status.conditions[] | select(.type == \"Accepted\") | .status == \"False\" and (.message | contains(\"$accepted_false\"))"
    check "$name: Ready=False, reason NotAccepted" holds mcpserver "$name" \
      '.status.conditions[] | select(.type == "Ready") | .status == "False" and .reason == "NotAccepted"'
    check "$name: no Deployment and no ConfigMap" bash -c "! kubectl -n $NS get deployment $name && ! kubectl -n $NS get configmap $name-manifest"
  fi
done

# ----------------------------------------------------------------------------------------------
log "leader election: a standby waits, takes over a crashed leader, and shutdown hands over"
holder() { kubectl -n "$SYSTEM_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}'; }
transitions() { kubectl -n "$SYSTEM_NS" get lease "$LEASE" -o jsonpath='{.spec.leaseTransitions}'; }
STANDBY_PORT=$((ADMIN_PORT + 3))
KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=e2e-standby \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$STANDBY_PORT" --lease-name "$LEASE" \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json >>"$E2E/standby.log" 2>&1 &
STANDBY_PID=$!
check "a standby replica is ready" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$STANDBY_PORT/readyz"
sleep 2
check "the standby does not lead" bash -c \
  "curl -fsS 'http://127.0.0.1:$STANDBY_PORT/metrics' | grep -qx 'mcp_operator_leader 0' && kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}' | grep -q '^e2e-operator_'"
TRANSITIONS=$(transitions)
kill -KILL "$OPERATOR_PID"
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=$STANDBY_PID
check "after the leader crashes, the standby takes the Lease once it expires" eventually 40 bash -c \
  "kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}' | grep -q '^e2e-standby_'"
check "the Lease counts the transition" test "$(transitions)" -gt "$TRANSITIONS"
# Writes the operator sent, from its own request counter (Lease renewals are updates, not counted).
writes_of() { curl -fsS "http://127.0.0.1:$1/metrics" | awk '/^mcp_operator_api_requests_total[{]verb="(apply|patch|create|delete)"/ {s += $2} END {print s + 0}'; }
quiet_leader() {
  # Every server has been reconciled once by the new leader (it reconciles all on taking over).
  eventually 30 bash -c "curl -fsS http://127.0.0.1:$STANDBY_PORT/metrics | awk '/^mcp_operator_reconciles_total/ {s += \$2} END {exit !(s >= $(kubectl get mcpservers -A --no-headers | wc -l))}'" || return 1
  sleep 3
  echo "writes by the new leader: $(writes_of "$STANDBY_PORT")"
  (($(writes_of "$STANDBY_PORT") == 0))
}
check "the new leader writes nothing for servers already converged" quiet_leader
check "the new leader reconciles" bash -c "kubectl -n $NS patch mcpserver weather --type=merge -p '{\"spec\": {\"title\": \"Weather (standby)\"}}' >/dev/null" 
check "and the ConfigMap follows" eventually 30 holds configmap weather-manifest '.data["manifest.yaml"] | test("Weather [(]standby[)]")'

check "SIGTERM stops the operator cleanly" bash -c "kill -TERM $OPERATOR_PID; for i in \$(seq 100); do kill -0 $OPERATOR_PID 2>/dev/null || exit 0; sleep 0.2; done; exit 1"
wait "$OPERATOR_PID" 2>/dev/null && rc=0 || rc=$?
check "the operator exits 0 (rc $rc)" test "$rc" -eq 0
OPERATOR_PID=
check "it released the Lease" bash -c "[[ -z \$(kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}') ]]"
check "a change while no operator runs waits" kubectl -n "$NS" patch mcpserver weather --type=merge -p '{"spec": {"title": "Weather (offline)"}}'
TRANSITIONS=$(transitions)
start_operator
check "a new operator takes the released Lease at once" eventually 15 bash -c \
  "kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}' | grep -q '^e2e-operator_'"
check "the Lease counts the transition" test "$(transitions)" -gt "$TRANSITIONS"
check "and reconciles what changed meanwhile" eventually 30 holds configmap weather-manifest '.data["manifest.yaml"] | test("Weather [(]offline[)]")'

# ----------------------------------------------------------------------------------------------
log "leader partition: a leader cut off from the API server stops before another takes over"
check "SIGTERM hands the Lease over" bash -c "kill -TERM $OPERATOR_PID; for i in \$(seq 100); do kill -0 $OPERATOR_PID 2>/dev/null || exit 0; sleep 0.2; done; exit 1"
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=
API_PORT=$(KUBECONFIG=$SA_KUBECONFIG kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}' | sed 's/.*://')
PROXY_PORT=$((ADMIN_PORT + 5))
python3 "$ROOT/tests/e2e/cut_proxy.py" "$PROXY_PORT" "$API_PORT" >"$E2E/proxy.log" 2>&1 &
PROXY_PID=$!
sed "s#https://127.0.0.1:$API_PORT#https://127.0.0.1:$PROXY_PORT#" "$SA_KUBECONFIG" >"$E2E/partitioned.kubeconfig"
KUBECONFIG=$E2E/partitioned.kubeconfig POD_NAMESPACE=$SYSTEM_NS POD_NAME=e2e-partitioned \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$((ADMIN_PORT + 6))" --lease-name "$LEASE" \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json >>"$E2E/partitioned.log" 2>&1 &
PARTITIONED_PID=$!
check "the partitioned replica's kubeconfig goes through the proxy" grep -q "127.0.0.1:$PROXY_PORT" "$E2E/partitioned.kubeconfig"
check "the replica behind the proxy leads" eventually 30 bash -c "[[ \$(kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}') == e2e-partitioned_* ]]"
KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=e2e-survivor \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name "$LEASE" \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json >>"$E2E/survivor.log" 2>&1 &
OPERATOR_PID=$!
sleep 6
kill -USR1 "$PROXY_PID"
check "the other replica takes the Lease of the partitioned one" eventually 60 bash -c "[[ \$(kubectl -n $SYSTEM_NS get lease $LEASE -o jsonpath='{.spec.holderIdentity}') == e2e-survivor_* ]]"
TAKEOVER=$(kubectl -n "$SYSTEM_NS" get lease "$LEASE" -o jsonpath='{.spec.acquireTime}')
check "the partitioned leader stepped down and exited on its own" eventually 10 bash -c "! kill -0 $PARTITIONED_PID 2>/dev/null"
stepped_down_first() {
  local down
  down=$(jq -r 'select(.message | test("could not renew the lease in time")) | .timestamp' "$E2E/partitioned.log" | head -1)
  echo "stepped down at ${down:-never}, the other replica acquired at $TAKEOVER"
  [[ -n $down ]] && jq -en --arg a "$down" --arg b "$TAKEOVER" \
    '($a | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) < ($b | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) or ($a < $b)'
}
check "it stepped down before the takeover (its own clock and the Lease's)" stepped_down_first
kill -USR2 "$PROXY_PID"
sleep 3
kubectl -n "$NS" patch mcpserver weather --type=merge -p '{"spec": {"title": "Weather (after the partition)"}}' >/dev/null
check "the new leader reconciles" eventually 30 holds configmap weather-manifest '.data["manifest.yaml"] | test("Weather [(]after the partition[)]")'
nothing_after_takeover() {
  local takeover sent
  takeover=$(jq -rn --arg b "$TAKEOVER" '$b | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601')
  sent=$(awk -v t="$takeover" '$1 >= t && (/ forwarded / || / connection from / && !/black-holed/)' "$E2E/proxy.log" | wc -l)
  echo "requests through the proxy after the takeover: $sent"
  tail -n 5 "$E2E/proxy.log"
  ((sent == 0))
}
check "the partitioned replica sent nothing to the API server after the takeover" nothing_after_takeover
kill "$PROXY_PID" 2>/dev/null || true
PROXY_PID=
PARTITIONED_PID=

# ----------------------------------------------------------------------------------------------
log "deleting the MCPServer collects its children"
check "kubectl delete mcpserver weather" kubectl -n "$NS" delete mcpserver weather --wait=true --timeout=60s
for child in "configmap weather-manifest" "deployment weather" "service weather" "secret $WEATHER_KEY"; do
  # shellcheck disable=SC2086
  check "garbage collection removed $child" eventually 60 absent $child
done
check "the operator counted its reconciles" bash -c "curl -fsS 'http://127.0.0.1:$ADMIN_PORT/metrics' | grep -E '^mcp_operator_reconciles_total\{result=\"success\"\} [1-9]'"

log "scoped to one namespace, with namespaced RBAC"
kill -TERM "$OPERATOR_PID" 2>/dev/null || true
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=
# Chart 0.1 templated the CRD; a release that held it without the keep annotation (crds.keep=false)
# would have it, and every MCPServer, deleted by the upgrade to this chart.
kubectl annotate "$CRD" meta.helm.sh/release-name="$RELEASE" meta.helm.sh/release-namespace="$SYSTEM_NS" >/dev/null
check "helm upgrade refuses to delete a CRD the release holds without keep, naming the command" bash -c \
  "! helm upgrade $RELEASE '$CHART' -n $SYSTEM_NS --set image.tag=e2e 2>'$E2E/handover.err'; grep -qF 'kubectl annotate crd mcpservers.kube-mcp.io helm.sh/resource-policy=keep' '$E2E/handover.err' || { cat '$E2E/handover.err'; false; }"
kubectl annotate "$CRD" meta.helm.sh/release-name- meta.helm.sh/release-namespace- >/dev/null
check "the refused upgrade left the CRD" kubectl get "$CRD"
check "helm upgrade to operator.watchNamespace=$NS" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e --set operator.watchNamespace="$NS"
check "RBAC: namespaced, the operator may still read and patch its CRD" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i patch $CRD) == yes ]]"
check "RBAC: MCPServers in $NS only" bash -c \
  "[[ \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i watch mcpservers.kube-mcp.io -n $NS) == yes && \$(KUBECONFIG='$SA_KUBECONFIG' kubectl auth can-i watch mcpservers.kube-mcp.io -A) == no ]]"
kubectl create namespace e2e-other >/dev/null
kubectl -n e2e-other apply -f "$ROOT/examples/weather.yaml" >/dev/null
kubectl -n "$NS" apply -f "$ROOT/examples/weather.yaml" >/dev/null
OPERATOR_SCOPE=(--namespace "$NS")
start_operator
check "the scoped operator serves $NS" eventually 60 observed weather
sleep 3
check "and leaves other namespaces alone" bash -c \
  "[[ -z \$(kubectl -n e2e-other get mcpserver weather -o jsonpath='{.status}') ]] && ! kubectl -n e2e-other get deployment weather"
kill -TERM "$OPERATOR_PID" 2>/dev/null || true
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=

log "platform policy: policy.requireAuth refuses servers without spec.auth at admission"
check "helm upgrade with policy.requireAuth=true" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e --set operator.watchNamespace="$NS" --set policy.requireAuth=true
# A new name, so the dry run is a create (an unchanged apply sends nothing to admit).
sed 's/^  name: weather$/  name: policy-check/' "$ROOT/examples/weather.yaml" >"$E2E/policy-check.yaml"
check "an MCPServer without spec.auth is refused" eventually 20 bash -c \
  "! kubectl -n $NS create --dry-run=server -f '$E2E/policy-check.yaml' 2>'$E2E/policy.err' && grep -q 'requires spec.auth' '$E2E/policy.err'"
check "one with spec.auth is admitted" bash -c \
  "sed 's|^spec:|spec:\\n  auth: {issuer: \"https://idp.example.com\"}|' '$E2E/policy-check.yaml' | kubectl -n $NS create --dry-run=server -f -"
check "and the rule holds for kube-mcp.io/v1beta1 as well" bash -c \
  "! sed 's|^apiVersion: kube-mcp.io/v1alpha1$|apiVersion: kube-mcp.io/v1beta1|' '$E2E/policy-check.yaml' |
     kubectl -n $NS create --dry-run=server -f - 2>'$E2E/policy-beta.err' && grep -q 'requires spec.auth' '$E2E/policy-beta.err'"

log "helm rollback leaves the CRD at its revision"
# As if a later operator had raised the CRD: a rollback to the first release must not lower it.
RAISED=$((SHIPPED_REVISION + 1))
kubectl annotate "$CRD" --overwrite kube-mcp.io/crd-revision="$RAISED" >/dev/null
BEFORE_ROLLBACK=$(revision_and_version)
check "helm rollback to the first revision succeeds" helm rollback "$RELEASE" 1 -n "$SYSTEM_NS"
check "the rollback happened (a ClusterRole again, no require-auth policy)" bash -c \
  "kubectl get clusterrole $RELEASE && ! kubectl get validatingadmissionpolicy $RELEASE-require-auth"
check "the CRD is untouched (revision and resourceVersion: $BEFORE_ROLLBACK)" test "$(revision_and_version)" == "$BEFORE_ROLLBACK"
check "the API server refuses to lower the CRD's revision, naming the binding to delete" bash -c \
  "! kubectl annotate $CRD --overwrite kube-mcp.io/crd-revision=$SHIPPED_REVISION 2>'$E2E/lower.err' &&
   grep -q 'would lower CRD mcpservers.kube-mcp.io from revision $RAISED to $SHIPPED_REVISION.*ValidatingAdmissionPolicyBinding $RELEASE-crd-revision.kube-mcp.io' '$E2E/lower.err' || { cat '$E2E/lower.err'; false; }"
check "and the older CRD file, applied as a GitOps tool would" bash -c \
  "! kubectl apply --server-side --force-conflicts -f '$CHART/crds/mcpservers.kube-mcp.io.yaml' 2>'$E2E/lower.err' &&
   grep -q 'would lower CRD mcpservers.kube-mcp.io' '$E2E/lower.err' || { cat '$E2E/lower.err'; false; }"

log "uninstall keeps the CRD"
check "helm uninstall succeeds" helm uninstall "$RELEASE" -n "$SYSTEM_NS"
check "the CRD survives the uninstall" kubectl get crd mcpservers.kube-mcp.io

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
