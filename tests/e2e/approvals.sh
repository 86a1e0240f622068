#!/usr/bin/env bash
# tests/e2e/approvals.sh: approval gates (tools[].approval) on a real control plane.
#
# Installs the chart (the MCPApproval CRD and the approvals ValidatingAdmissionPolicy, evaluated
# by the real kube-apiserver), runs the operator as the chart's ServiceAccount and applies a
# server with gated tools: the operator grants the server's ServiceAccount its approvals Role and
# the approvers' group theirs. Then runs mcp-runtime locally as the server's ServiceAccount (a
# TokenRequest token: exactly the RBAC its pods would have) on the manifest the operator wrote,
# in front of a loopback upstream that records what it receives, and checks: a guarded call
# creates an MCPApproval owned by the MCPServer; a user outside the group gets 403 from the API
# server; an approver can neither record another name nor skip ahead (the policy); an approver
# approves; the call runs once with exactly the original arguments; a second run of the same
# approval and a changed argument are refused; an approval that expired refuses; a denial
# refuses; a client that takes tasks gets a task that completes once approved, its outcome
# sealed in status.outcome, which an approver cannot overwrite; the RBAC goes when the spec drops its approvals, the approvals go with the server.
#
# Usage: tests/e2e/approvals.sh  (KEEP_CLUSTER=1 leaves the control plane running afterwards)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: a control plane in $KUBE_MCP_TEST_RUN (default /tmp/kube-mcp-e2e), logs under it, and three
# local processes (operator, runtime, upstream) on 127.0.0.1, all stopped by PID on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}
CP="$ROOT/tests/control-plane.sh"
E2E=$KUBE_MCP_TEST_RUN/approvals
E2E_NAME=approvals
SYSTEM_NS=kube-mcp-system
RELEASE=kube-mcp
SA=kube-mcp
NS=ops
SERVER=ops
# The server's pods run as the namespace's default ServiceAccount.
RUNNER=system:serviceaccount:$NS:default
GROUP=oncall
APPROVER=bob
META=kube-mcp.io/authorization
# shellcheck source=tests/lib/e2e.sh
source "$ROOT/tests/lib/e2e.sh"
# shellcheck source=tests/lib/cluster.sh
source "$ROOT/tests/lib/cluster.sh"

OPERATOR_PID=
RUNTIME_PID=
UPSTREAM_PID=
cleanup() {
  local rc=$?
  [[ -n $RUNTIME_PID ]] && kill "$RUNTIME_PID" 2>/dev/null || true
  [[ -n $UPSTREAM_PID ]] && kill "$UPSTREAM_PID" 2>/dev/null || true
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  cluster_stop
  exit "$rc"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cluster_prerequisites

cluster_fresh

# ----------------------------------------------------------------------------------------------
log "install the chart: the MCPApproval CRD and the approvals policy"
CHART=$ROOT/charts/kube-mcp
for ns in "$SYSTEM_NS" "$NS"; do kubectl create namespace "$ns" >/dev/null; done
check "helm install" helm install "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e
POLICY=$RELEASE-approvals.kube-mcp.io
check "the API server type-checked the approvals policy without warnings" eventually 30 bash -c \
  "kubectl get validatingadmissionpolicy $POLICY -o json | jq -e '.status.observedGeneration == .metadata.generation and ((.status.typeChecking.expressionWarnings // []) | length == 0)'"
check "the MCPApproval CRD is installed, with a status subresource" bash -c \
  "kubectl get crd mcpapprovals.kube-mcp.io -o json | jq -e '.spec.versions[0].subresources.status == {}'"

log "the operator runs locally as the chart's ServiceAccount"
"$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$E2E/operator.kubeconfig"
ADMIN_PORT=$(free_port)
KUBECONFIG=$E2E/operator.kubeconfig POD_NAMESPACE=$SYSTEM_NS POD_NAME=e2e-operator \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name kube-mcp-leader \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e \
  --log-format json --log-level info,mcp_operator=debug >>"$E2E/operator.log" 2>&1 &
OPERATOR_PID=$!
check "operator /readyz answers" eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/readyz"

log "a loopback upstream that records what it receives"
UPSTREAM_PORT=$(free_port)
RECORDED=$E2E/upstream.jsonl
: >"$RECORDED"
python3 "$ROOT/tests/e2e/record_upstream.py" "$UPSTREAM_PORT" "$RECORDED" 2>"$E2E/upstream.log" &
UPSTREAM_PID=$!
check "the upstream answers" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$UPSTREAM_PORT/ready"
: >"$RECORDED"

# ----------------------------------------------------------------------------------------------
log "apply a server whose tools need approvals"
kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: $SERVER}
spec:
  tools:
    - name: delete_namespace
      inputSchema:
        type: object
        properties: {name: {type: string}, force: {type: boolean}}
        required: [name]
      approval:
        approvers: {group: $GROUP}
        message: "Delete namespace {{ args.name }}?"
        ttlMs: 900000
      http:
        method: POST
        url: "http://127.0.0.1:$UPSTREAM_PORT/namespaces/{name}"
        body: {json: {name: {\$arg: name}, force: {\$arg: force}}}
    - name: quick_delete
      inputSchema: {type: object, properties: {name: {type: string}}, required: [name]}
      approval:
        approvers: {group: $GROUP}
        message: "Delete namespace {{ args.name }} now?"
        ttlMs: 3000
      http:
        method: POST
        url: "http://127.0.0.1:$UPSTREAM_PORT/quick/{name}"
        body: {json: {name: {\$arg: name}}}
YAML
check "the server is accepted" eventually 60 bash -c "[[ \$(kubectl -n $NS get mcps $SERVER -o json | jq -r '.status.conditions[]? | select(.type == \"Accepted\") | .status') == True ]]"
SERVER_UID=$(kubectl -n "$NS" get mcps "$SERVER" -o jsonpath='{.metadata.uid}')
owned="(.metadata.ownerReferences[0] | .kind == \"MCPServer\" and .uid == \"$SERVER_UID\")"
check "the runtime's Role exists, owned by the server" eventually 30 holds "$NS" role "$SERVER-approvals-runtime" "$owned"
check "its RoleBinding names the server's ServiceAccount" eventually 30 holds "$NS" rolebinding "$SERVER-approvals-runtime" \
  "$owned and .subjects == [{kind: \"ServiceAccount\", name: \"default\", namespace: \"$NS\"}]"
check "the approvers' RoleBinding names the group" eventually 30 holds "$NS" rolebinding "$SERVER-approvers" \
  "$owned and .subjects == [{apiGroup: \"rbac.authorization.k8s.io\", kind: \"Group\", name: \"$GROUP\"}]"
check "the pods get API credentials and --approvals-kube with the server as owner" holds "$NS" deployment "$SERVER" \
  "(.spec.template.spec.containers[0].args | index(\"--approvals-kube\") != null and index(\"$SERVER_UID\") != null) and
   ([.spec.template.spec.volumes[] | select(.name == \"kube-api\")] | length == 1)"
check "RBAC: the server's ServiceAccount creates approvals and updates their status, cannot patch it" bash -c \
  "[[ \$(kubectl auth can-i create mcpapprovals.kube-mcp.io -n $NS --as=$RUNNER) == yes &&
     \$(kubectl auth can-i update mcpapprovals.kube-mcp.io --subresource=status -n $NS --as=$RUNNER) == yes &&
     \$(kubectl auth can-i patch mcpapprovals.kube-mcp.io --subresource=status -n $NS --as=$RUNNER) == no ]]"
check "RBAC: $GROUP may patch approvals' status, other groups may not" bash -c \
  "[[ \$(kubectl auth can-i patch mcpapprovals.kube-mcp.io --subresource=status -n $NS --as=$APPROVER --as-group=$GROUP) == yes &&
     \$(kubectl auth can-i patch mcpapprovals.kube-mcp.io --subresource=status -n $NS --as=mallory --as-group=other) == no &&
     \$(kubectl auth can-i create mcpapprovals.kube-mcp.io -n $NS --as=$APPROVER --as-group=$GROUP) == no ]]"

# ----------------------------------------------------------------------------------------------
log "the runtime serves the operator's manifest as the server's ServiceAccount"
kubectl -n "$NS" get configmap "$SERVER-manifest" -o jsonpath='{.data.manifest\.yaml}' >"$E2E/manifest.yaml"
(
  umask 077 # a bearer token
  kubectl -n "$NS" create token default --duration=1h >"$E2E/runtime.token"
)
kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$E2E/ca.crt"
API=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
RT_PORT=$(free_port)
RT_ADMIN=$(free_port)
"$RUNTIME_BIN" serve --manifest "$E2E/manifest.yaml" --listen "127.0.0.1:$RT_PORT" \
  --admin-listen "127.0.0.1:$RT_ADMIN" --approvals-kube --kube-api-url "$API" \
  --kube-token-file "$E2E/runtime.token" --kube-ca-file "$E2E/ca.crt" --kube-namespace "$NS" \
  --approvals-owner-name "$SERVER" --approvals-owner-uid "$SERVER_UID" --audit-log stdout \
  >"$E2E/audit.jsonl" 2>"$E2E/runtime.log" &
RUNTIME_PID=$!
check "mcp-runtime is ready" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$RT_ADMIN/readyz"

# call TOOL ARGS_JSON OUT: one stateless 2026-07-28 tools/call, its JSON-RPC answer in OUT (the
# runtime streams it as SSE when it takes longer than 500 ms: then the last `data:` line).
call() {
  jq -n --arg tool "$1" --argjson args "$2" '{jsonrpc: "2.0", id: 1, method: "tools/call",
      params: {name: $tool, arguments: $args, _meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}}' |
    curl -fsS --max-time 30 "http://127.0.0.1:$RT_PORT/mcp" -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
      -H 'Mcp-Method: tools/call' -H "Mcp-Name: $1" --data-binary @- >"$3.raw"
  if grep -q '^data: ' "$3.raw"; then
    sed -n 's/^data: //p' "$3.raw" | tail -n 1 >"$3"
  else
    cp "$3.raw" "$3"
  fi
}
denial() { jq -r --arg m "$META" '.result._meta[$m].authorizationContextId // empty' "$1" 2>/dev/null || true; }
hint_state() { jq -r --arg m "$META" '.result._meta[$m].remediationHints[0].state // empty' "$1"; }
# patch_status USER GROUP ID STATE DECIDED_BY: what an approver runs.
patch_status() {
  kubectl -n "$NS" --as="$1" --as-group="$2" patch mcpapproval "$3" --subresource=status --type=merge \
    -p "{\"status\": {\"state\": \"$4\", \"decidedBy\": \"$5\"}}"
}
# refused TEXT CMD...: CMD fails, saying TEXT.
refused() {
  local text=$1
  shift
  if "$@" >"$E2E/refused.out" 2>&1; then
    echo "not refused:"
    cat "$E2E/refused.out"
    return 1
  fi
  grep -q -- "$text" "$E2E/refused.out" || {
    cat "$E2E/refused.out"
    return 1
  }
}
recorded() { wc -l <"$RECORDED" | tr -d ' '; }

log "a guarded call asks for an approval"
ARGS='{"name": "prod", "force": true}'
call delete_namespace "$ARGS" "$E2E/asked.json" || true
check "the call is a tool error naming the kubectl command to approve" \
  jq -e '.result.isError == true and (.result.content[0].text | test("kubectl -n ops patch mcpapproval apr-[0-9a-f]+ --subresource=status"))' "$E2E/asked.json"
ID=$(denial "$E2E/asked.json")
check "an MCPApproval appears, owned by the MCPServer, created by the server's ServiceAccount" holds "$NS" mcpapproval "${ID:-none}" \
  "$owned and .spec.requestedBy == \"$RUNNER\" and .spec.tool == \"delete_namespace\" and .spec.principal == \"anonymous\"
   and .spec.message == \"Delete namespace prod?\" and .spec.approvers.group == \"$GROUP\" and (.spec.call.digest | startswith(\"sha256:\"))
   and (.status.state // \"pending\") == \"pending\""
check "kubectl get mcpapprovals lists it" bash -c "kubectl -n $NS get mcpapprovals | grep -q '^${ID:-none} .*delete_namespace'"
call delete_namespace "$ARGS" "$E2E/again.json" || true
check "asking again reuses the pending approval" test "$(denial "$E2E/again.json")" == "$ID"
check "someone outside $GROUP gets 403 from the API server" \
  refused 'Error from server (Forbidden): .* User "mallory" cannot [a-z]* resource "mcpapprovals/status"' \
  patch_status mallory other "$ID" approved mallory
check "an approver cannot record another name (admission policy)" \
  refused "must be your own user name, $APPROVER" patch_status "$APPROVER" "$GROUP" "$ID" approved alice
check "an approver cannot mark it used (admission policy)" \
  refused 'pending -> used is not allowed' patch_status "$APPROVER" "$GROUP" "$ID" used "$APPROVER"
check "nothing reached the upstream before the approval" test "$(recorded)" == 0
check "an approver of $GROUP approves in their own name" patch_status "$APPROVER" "$GROUP" "$ID" approved "$APPROVER"
check "the decision cannot be changed afterwards" \
  refused 'approved -> denied is not allowed' patch_status carol "$GROUP" "$ID" denied carol

log "the approved call runs once, with exactly the original arguments"
call delete_namespace '{"force": true, "name": "prod"}' "$E2E/ran.json" || true
check "the same call (keys in another order) runs" jq -e '.result.isError != true' "$E2E/ran.json"
check "the upstream received one request, with exactly the original arguments" bash -c \
  "[[ \$(wc -l <'$RECORDED') == 1 ]] && jq -e '.method == \"POST\" and .path == \"/namespaces/prod\" and .body == {name: \"prod\", force: true}' '$RECORDED'"
check "the approval is used, decided by $APPROVER" holds "$NS" mcpapproval "$ID" \
  ".status.state == \"used\" and .status.decidedBy == \"$APPROVER\" and (.status.usedAt | length > 0)"
check "the audit record names the approval, its requester and its approver" bash -c \
  "jq -e -s 'map(select(.audit == \"tools/call\" and .approval.id == \"$ID\" and .approval.state == \"approved\" and .approval.requester == \"anonymous\" and .approval.approver == \"$APPROVER\" and .outcome == \"ok\")) | length == 1' '$E2E/audit.jsonl'"

log "a second run of the same approval, and a changed argument, are refused"
call delete_namespace "$ARGS" "$E2E/second.json" || true
SECOND=$(denial "$E2E/second.json")
check "the same call again needs a new approval" bash -c "[[ -n '$SECOND' && '$SECOND' != '$ID' && \$(jq -r '.result.isError' '$E2E/second.json') == true ]]"
check "a used approval cannot be approved again (admission policy)" \
  refused 'used -> approved is not allowed' patch_status "$APPROVER" "$GROUP" "$ID" approved "$APPROVER"
call delete_namespace '{"name": "prod", "force": false}' "$E2E/changed.json" || true
CHANGED=$(denial "$E2E/changed.json")
check "a changed argument is another call, pending" bash -c \
  "[[ -n '$CHANGED' && '$CHANGED' != '$ID' && '$CHANGED' != '$SECOND' && \$(jq -r --arg m '$META' '.result._meta[\$m].remediationHints[0].state' '$E2E/changed.json') == pending ]]"
check "the upstream still received only one request" test "$(recorded)" == 1

log "an approval that expired refuses"
call quick_delete '{"name": "tmp"}' "$E2E/quick.json" || true
QUICK=$(denial "$E2E/quick.json")
check "an approver approves the short-lived approval" patch_status "$APPROVER" "$GROUP" "${QUICK:-none}" approved "$APPROVER"
sleep 4 # its ttlMs is 3000
call quick_delete '{"name": "tmp"}' "$E2E/expired.json" || true
check "after its expiry the approved call is refused" bash -c \
  "[[ \$(jq -r --arg m '$META' '.result._meta[\$m].remediationHints[0].state' '$E2E/expired.json') == expired ]] && jq -e '.result.content[0].text | test(\"expired\")' '$E2E/expired.json'"
check "and the upstream never received it" bash -c "! grep -q '/quick/' '$RECORDED'"

log "a denial refuses"
call delete_namespace '{"name": "staging"}' "$E2E/deny.json" || true
DENIED=$(denial "$E2E/deny.json")
check "an approver denies" patch_status "$APPROVER" "$GROUP" "${DENIED:-none}" denied "$APPROVER"
call delete_namespace '{"name": "staging"}' "$E2E/denied.json" || true
check "the denied call is refused" bash -c \
  "[[ \$(jq -r --arg m '$META' '.result._meta[\$m].remediationHints[0].state' '$E2E/denied.json') == denied ]]"
check "and the upstream never received it" bash -c "! grep -q '/namespaces/staging' '$RECORDED'"
check "the runtime logged no token" bash -c "! grep -qF \"\$(cat '$E2E/runtime.token')\" '$E2E/runtime.log' '$E2E/audit.jsonl'"

log "a client that takes tasks waits for the approval as a task"
# rpc METHOD NAME PARAMS_JSON OUT: a stateless 2026-07-28 request declaring the Tasks extension.
rpc() {
  jq -n --arg method "$1" --argjson params "$3" '{jsonrpc: "2.0", id: 1, method: $method,
      params: ($params + {_meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {extensions: {"io.modelcontextprotocol/tasks": {}}}}})}' |
    curl -fsS --max-time 30 "http://127.0.0.1:$RT_PORT/mcp" -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
      -H "Mcp-Method: $1" -H "Mcp-Name: $2" --data-binary @- >"$4.raw"
  if grep -q '^data: ' "$4.raw"; then
    sed -n 's/^data: //p' "$4.raw" | tail -n 1 >"$4"
  else
    cp "$4.raw" "$4"
  fi
}
rpc tools/call delete_namespace '{"name": "delete_namespace", "arguments": {"name": "tasked"}}' "$E2E/task.json" || true
check "the guarded call is a working task naming the approval" \
  jq -e '.result.resultType == "task" and .result.status == "working" and (.result.statusMessage | test("Delete namespace tasked"))' "$E2E/task.json"
TASK=$(jq -r '.result.taskId // empty' "$E2E/task.json")
TASKED=$(denial "$E2E/task.json")
check "an approver of $GROUP approves it" patch_status "$APPROVER" "$GROUP" "${TASKED:-none}" approved "$APPROVER"
rpc tasks/get "${TASK:-none}" "{\"taskId\": \"${TASK:-none}\"}" "$E2E/task-done.json" || true
check "tasks/get completes the task with the call's result" \
  jq -e '.result.status == "completed" and .result.result.isError != true' "$E2E/task-done.json"
check "the upstream received it once, with exactly the original arguments" bash -c \
  "[[ \$(grep -c '/namespaces/tasked' '$RECORDED') == 1 ]] && grep '/namespaces/tasked' '$RECORDED' | jq -e '.body == {name: \"tasked\", force: null} or .body == {name: \"tasked\"}'"
check "the outcome is recorded in status.outcome, sealed (not plaintext)" holds "$NS" mcpapproval "${TASKED:-none}" \
  '.status.state == "used" and (.status.outcome | length > 0) and (.status.outcome | test("tasked|namespaces") | not)'
check "an approver cannot overwrite the outcome (admission policy)" \
  refused 'status.outcome is set once' kubectl -n "$NS" --as="$APPROVER" --as-group="$GROUP" patch mcpapproval "${TASKED:-none}" \
  --subresource=status --type=merge -p '{"status": {"outcome": "forged"}}'
rpc tasks/get "${TASK:-none}" "{\"taskId\": \"${TASK:-none}\"}" "$E2E/task-again.json" || true
check "a second tasks/get reads the same result without a second call" bash -c \
  "jq -e --slurpfile first '$E2E/task-done.json' '.result.result == \$first[0].result.result' '$E2E/task-again.json' && [[ \$(grep -c '/namespaces/tasked' '$RECORDED') == 1 ]]"

# ----------------------------------------------------------------------------------------------
log "the RBAC goes with the approvals, the approvals with the server"
kubectl -n "$NS" patch mcps "$SERVER" --type=json -p \
  '[{"op": "remove", "path": "/spec/tools/0/approval"}, {"op": "remove", "path": "/spec/tools/1/approval"}]' >/dev/null
check "a spec without approvals loses the approvals Roles and RoleBindings" eventually 60 bash -c \
  "[[ -z \$(kubectl -n $NS get roles,rolebindings -l kube-mcp.io/server=$SERVER -o name) ]]"
check "and its pods lose the API credentials" eventually 30 holds "$NS" deployment "$SERVER" \
  '(.spec.template.spec.containers[0].args | index("--approvals-kube") == null) and ([.spec.template.spec.volumes[] | select(.name == "kube-api")] | length == 0)'
kubectl -n "$NS" delete mcps "$SERVER" >/dev/null
check "deleting the server garbage-collects its approvals" eventually 90 bash -c \
  "[[ -z \$(kubectl -n $NS get mcpapprovals -o name) ]]"
check "the operator logged no refused watch" bash -c "! grep -E 'forbidden|watch failed' '$E2E/operator.log'"

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
