#!/usr/bin/env bash
# tests/e2e/tenant.sh: what a tenant may do with MCPServers, on a real control plane.
#
# Installs the chart (its ValidatingAdmissionPolicy is evaluated by the real kube-apiserver) and
# acts as a tenant user with only MCPServer rights in one namespace, by impersonation: Secrets
# they cannot read, images, hosts, annotations, Service types and tolerations outside the
# allow-lists are refused with the rule named; what is allowed is accepted. Then runs the
# operator as the chart's ServiceAccount and checks host conflicts between servers of two
# namespaces (the older claim wins, the newer recovers when the older is deleted).
#
# Usage: tests/e2e/tenant.sh     (KEEP_CLUSTER=1 leaves the control plane running afterwards)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: a control plane in $KUBE_MCP_TEST_RUN (default /tmp/kube-mcp-e2e), logs under it, and an
# operator process on 127.0.0.1, all stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}
CP="$ROOT/tests/control-plane.sh"
E2E=$KUBE_MCP_TEST_RUN/tenant
E2E_NAME=tenant
SYSTEM_NS=kube-mcp-system
RELEASE=kube-mcp
SA=kube-mcp
TENANT=alice
T1=tenant-a
T2=tenant-b
DOMAIN=tenants.example.com
# shellcheck source=tests/lib/e2e.sh
source "$ROOT/tests/lib/e2e.sh"

OPERATOR_PID=
cleanup() {
  local rc=$?
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  if [[ ${KEEP_CLUSTER:-} == 1 ]]; then
    log "control plane left running: eval \"\$(KUBE_MCP_TEST_RUN=$KUBE_MCP_TEST_RUN $CP env)\""
  else
    "$CP" stop || true
  fi
  exit "$rc"
}

if ! command -v jq >/dev/null; then
  log "installing jq"
  apt-get update -qq && apt-get install -y -qq jq >/dev/null
fi
log "building mcp-operator"
(cd "$ROOT" && nice cargo build --quiet -p mcp-operator)
OPERATOR_BIN=$ROOT/target/debug/mcp-operator

# A fresh control plane: this script's objects must not meet another script's.
"$CP" stop >/dev/null 2>&1 || true
"$CP" start
trap cleanup EXIT
eval "$("$CP" env)"
mkdir -p "$E2E"

# ----------------------------------------------------------------------------------------------
log "install the chart with the admission policy (host allow-list on)"
CHART=$ROOT/charts/kube-mcp
for ns in "$SYSTEM_NS" "$T1" "$T2"; do kubectl create namespace "$ns" >/dev/null; done
POLICY_VALUES=(--set admissionPolicy.rules.ingressHosts.enabled=true
  --set "admissionPolicy.rules.ingressHosts.allowedSuffixes={$DOMAIN}")
check "helm install with the admission policy" \
  helm install "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}"
POLICY=$RELEASE.kube-mcp.io
check "the API server type-checked the policy without warnings" eventually 30 bash -c \
  "kubectl get validatingadmissionpolicy $POLICY -o json | jq -e '.status.observedGeneration == .metadata.generation and ((.status.typeChecking.expressionWarnings // []) | length == 0)'"

log "a tenant with MCPServer rights in $T1 and one readable Secret"
kubectl -n "$T1" create role mcp-author --verb=get,list,watch,create,update,patch,delete \
  --resource=mcpservers.kube-mcp.io >/dev/null
kubectl -n "$T1" create rolebinding "$TENANT-mcp" --role=mcp-author --user="$TENANT" >/dev/null
kubectl -n "$T1" create role read-upstream --verb=get --resource=secrets --resource-name=upstream >/dev/null
kubectl -n "$T1" create rolebinding "$TENANT-upstream" --role=read-upstream --user="$TENANT" >/dev/null
kubectl -n "$T1" create secret generic upstream --from-literal=token=readable >/dev/null
kubectl -n "$T1" create secret generic platform --from-literal=token=not-for-tenants >/dev/null
check "the tenant cannot read Secret platform, can read upstream" bash -c \
  "[[ \$(kubectl auth can-i get secret/platform -n $T1 --as $TENANT) == no && \$(kubectl auth can-i get secret/upstream -n $T1 --as $TENANT) == yes ]]"

# accepted_is NS NAME "STATUS REASON": the server's Accepted condition.
accepted_is() { [[ $(condition "$1" "$2" Accepted) == "$3" ]]; }
serving() { accepted_is "$1" "$2" "True Compiled" && kubectl -n "$1" get ingress "$2"; }

# as_tenant_apply NAME SPEC_JSON: applies an MCPServer NAME with one tool plus SPEC_JSON, as the
# tenant; stderr goes to $E2E/NAME.err.
as_tenant_apply() {
  jq -n --arg name "$1" --argjson extra "$2" '{
      apiVersion: "kube-mcp.io/v1alpha1", kind: "MCPServer", metadata: {name: $name},
      spec: ({tools: [{name: "hi", content: [{type: "text", text: "hi"}]}]} + $extra)}' |
    kubectl --as "$TENANT" -n "$T1" apply -f - 2>"$E2E/$1.err"
}
# refused NAME SPEC_JSON TEXT...: the tenant's apply is refused and the error holds every TEXT.
refused() {
  local name=$1 spec=$2
  shift 2
  if as_tenant_apply "$name" "$spec"; then
    echo "accepted, but should have been refused"
    return 1
  fi
  cat "$E2E/$name.err"
  for text in "$@"; do grep -qF -- "$text" "$E2E/$name.err" || { echo "missing: $text"; return 1; }; done
}
HTTP_TOOL='{"name": "call", "http": {"url": "https://api.example.com/x",
  "headers": [{"name": "Authorization", "secretKeyRef": {"name": "SECRET", "key": "token"}}]}}'

check "refused: spec.secrets lists a Secret the tenant cannot get" refused s-secret \
  '{"secrets": ["platform"]}' "spec.secrets" "rule secrets" "$TENANT may not get" "platform"
check "refused: an env secretKeyRef to a Secret the tenant cannot get" refused s-env \
  '{"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "platform", "key": "token"}}}]}' \
  "spec.env[].valueFrom.secretKeyRef" "rule secrets"
check "refused: a readable and an unreadable Secret together" refused s-both \
  '{"secrets": ["upstream", "platform"]}' "rule secrets"
check "refused: an image outside the allow-list" refused s-image \
  '{"image": "registry.evil.example/runtime:1"}' "spec.image" "rule images" "registry.evil.example/runtime:1"
check "refused: a look-alike repository of the allowed one" refused s-lookalike \
  '{"image": "ghcr.io/kube-mcp/kube-mcp-extra:1"}' "rule images"
check "refused: a host outside the allowed domains" refused s-host \
  '{"ingress": {"host": "mcp.example.com"}}' "spec.ingress.host" "rule ingressHosts" "$DOMAIN"
check "refused: a host that only ends like an allowed domain" refused s-host2 \
  "{\"ingress\": {\"host\": \"evil$DOMAIN\"}}" "rule ingressHosts"
check "refused: an ingress annotation outside the allow-list" refused s-annotation \
  "{\"ingress\": {\"host\": \"a.$DOMAIN\", \"annotations\": {\"nginx.ingress.kubernetes.io/auth-url\": \"http://x\"}}}" \
  "spec.ingress.annotations" "rule ingressAnnotations" "nginx.ingress.kubernetes.io/auth-url"
check "refused: Service type LoadBalancer" refused s-lb \
  '{"service": {"type": "LoadBalancer"}}' "spec.service.type" "rule serviceTypes" "LoadBalancer"
check "refused: a toleration of every taint" refused s-toleration \
  '{"tolerations": [{"operator": "Exists"}]}' "spec.tolerations" "rule tolerations"
for name in s-secret s-env s-both s-image s-lookalike s-host s-host2 s-annotation s-lb s-toleration; do
  absent "$T1" mcpserver "$name" || { echo "refused $name exists" && FAILED=$((FAILED + 1)); }
done

ALLOWED=$(jq -n --argjson tool "${HTTP_TOOL//SECRET/upstream}" --arg host "weather.$DOMAIN" '{
  tools: [$tool], secrets: ["upstream"],
  env: [{name: "T", valueFrom: {secretKeyRef: {name: "upstream", key: "token"}}}],
  image: "ghcr.io/kube-mcp/kube-mcp:1.2.3", service: {type: "ClusterIP"},
  ingress: {host: $host, path: "/weather", annotations: {"nginx.ingress.kubernetes.io/proxy-read-timeout": "7200"}}}')
check "accepted: readable Secrets, allowed image, host, annotation and Service type" \
  as_tenant_apply allowed "$ALLOWED"
check "the tenant may update their own server" bash -c \
  "kubectl --as $TENANT -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Allowed\"}}'"
check "another user without access to Secret upstream cannot edit that server" bash -c \
  "kubectl -n $T1 create rolebinding bob-mcp --role=mcp-author --user=bob >/dev/null &&
   ! kubectl --as bob -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Bob was here\"}}' 2>$E2E/bob.err;
   cat $E2E/bob.err; grep -q 'rule secrets' $E2E/bob.err"

log "each rule can be switched off"
check "helm upgrade with serviceTypes and images off" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}" \
  --set admissionPolicy.rules.serviceTypes.enabled=false --set admissionPolicy.rules.images.enabled=false
# The API server refreshes policies from an informer: allow it a moment.
check "now LoadBalancer and any image are accepted" eventually 20 as_tenant_apply s-lb \
  '{"service": {"type": "LoadBalancer"}, "image": "registry.example.com/other:1"}'
check "and the secrets rule still holds" refused s-secret '{"secrets": ["platform"]}' "rule secrets"
kubectl -n "$T1" delete mcpserver s-lb >/dev/null
check "helm upgrade back to the defaults" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}"
check "Warn instead of Deny lets the manifest in with a warning" bash -c "
  helm upgrade $RELEASE '$CHART' -n $SYSTEM_NS --set image.tag=e2e --set 'admissionPolicy.validationActions={Warn}' >/dev/null &&
  for i in \$(seq 40); do
    out=\$(jq -n '{apiVersion: \"kube-mcp.io/v1alpha1\", kind: \"MCPServer\", metadata: {name: \"warned\"},
      spec: {tools: [{name: \"hi\", content: [{type: \"text\", text: \"hi\"}]}], service: {type: \"NodePort\"}}}' |
      kubectl --as $TENANT -n $T1 apply --dry-run=server -f - 2>&1) && grep -q 'rule serviceTypes' <<<\"\$out\" && exit 0
    sleep 0.5
  done; echo \"\$out\"; exit 1"
check "helm upgrade back to Deny" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}"

# ----------------------------------------------------------------------------------------------
log "the operator runs locally as the chart's ServiceAccount"
SA_KUBECONFIG=$E2E/operator.kubeconfig
"$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$SA_KUBECONFIG"
ADMIN_PORT=$((20000 + RANDOM % 10000))
KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=tenant-operator \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name kube-mcp-leader \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json \
  --log-level info,mcp_operator=debug >>"$E2E/operator.log" 2>&1 &
OPERATOR_PID=$!
check "operator /readyz answers" eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/readyz"
check "the tenant's allowed server is accepted by the operator" eventually 60 accepted_is "$T1" allowed "True Compiled"

log "host conflicts: two namespaces claim one host and path"
claim() { # claim NAMESPACE NAME PATH
  jq -n --arg name "$2" --arg host "shared.$DOMAIN" --arg path "$3" '{
      apiVersion: "kube-mcp.io/v1alpha1", kind: "MCPServer", metadata: {name: $name},
      spec: {tools: [{name: "hi", content: [{type: "text", text: "hi"}]}],
             ingress: {host: $host, path: $path}}}' | kubectl -n "$1" apply -f - >/dev/null
}
claim "$T1" first /tools
check "the first claim is accepted, with an Ingress" eventually 60 serving "$T1" first
sleep 1 # creation timestamps have one-second resolution
claim "$T2" second /tools
check "the newer claim gets Accepted=False reason HostConflict, naming the older server" eventually 60 \
  holds "$T2" mcpserver second '.status.conditions[] | select(.type == "Accepted") |
    .status == "False" and .reason == "HostConflict" and (.message | contains("'"$T1"'/first"))'
check "the newer server got no Ingress (nor any child)" bash -c \
  "! kubectl -n $T2 get ingress second && ! kubectl -n $T2 get deployment second"
check "a Warning event names the conflict" eventually 20 bash -c \
  "kubectl -n $T2 get events --field-selector involvedObject.name=second -o json | jq -e '[.items[] | select(.reason == \"HostConflict\" and .type == \"Warning\")] | length > 0'"
check "the older server is untouched" accepted_is "$T1" first "True Compiled"
claim "$T2" third /other
check "another path on the same host is no conflict" eventually 60 accepted_is "$T2" third "True Compiled"
check "deleting the older server" kubectl -n "$T1" delete mcpserver first --wait=true --timeout=60s
check "the newer server recovers: Accepted=True and its own Ingress" eventually 60 serving "$T2" second
claim "$T1" first /tools
check "the old name, created again, is now the newer claim and waits" eventually 60 \
  holds "$T1" mcpserver first '.status.conditions[] | select(.type == "Accepted") | .reason == "HostConflict" and (.message | contains("'"$T2"'/second"))'

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
