#!/usr/bin/env bash
# tests/e2e/tenant.sh: what a tenant may do with MCPServers, on a real control plane.
#
# Installs the chart (its ValidatingAdmissionPolicy is evaluated by the real kube-apiserver) and
# acts as a tenant user with only MCPServer rights in one namespace, by impersonation: Secrets
# they cannot read, images, hosts, annotations, Service types and tolerations outside the
# allow-lists are refused with the rule named; what is allowed is accepted. Then runs the
# operator as the chart's ServiceAccount and checks host conflicts between servers of two
# namespaces (the older claim wins, the newer recovers when the older is deleted), Gateway API
# exposure, serving under a path prefix, NetworkPolicies, scaling, suspend, and an operator
# restricted to a list of namespaces with a Role in each.
#
# Usage: tests/e2e/tenant.sh     (KEEP_CLUSTER=1 leaves the control plane running afterwards)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: a control plane in $KUBE_MCP_TEST_RUN (default /tmp/kube-mcp-e2e), logs under it, and an
# operator process on 127.0.0.1, all stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}
CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
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
# shellcheck source=tests/lib/cluster.sh
source "$ROOT/tests/lib/cluster.sh"

OPERATOR_PID=
RUNTIME_PID=
cleanup() {
  local rc=$?
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  [[ -n $RUNTIME_PID ]] && kill "$RUNTIME_PID" 2>/dev/null || true
  cluster_stop
  exit "$rc"
}

cluster_prerequisites

cluster_fresh

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

log "chart: every new value set renders, lints and passes a server-side dry run"
DIGEST=sha256:$(printf '%064d' 7)
ALL_VALUES=(--set operator.replicas=2 --set image.digest=$DIGEST --set runtimeImage.digest=$DIGEST
  --set networkPolicy.enabled=true --set 'networkPolicy.ingressNamespaces={ingress-nginx,gateway-system}'
  --set 'networkPolicy.ingressCIDRs={10.0.0.0/16,fd00:10::/64}' --set 'runtimeTransports={modern,streamable}'
  --set 'networkPolicy.monitoringNamespaces={monitoring}' --set rbac.aggregateToDefaultRoles=true
  --set test.image=registry.k8s.io/kubectl:v1.37.2 --set 'admissionPolicy.validationActions={Warn,Audit}'
  --set 'admissionPolicy.namespaceSelector.matchLabels.tenant=yes'
  --set 'admissionPolicy.rules.images.allowed={registry.example.com/mcp/}'
  --set 'admissionPolicy.rules.ingressAnnotations.allowed={example.com/*}'
  --set 'admissionPolicy.rules.serviceTypes.allowed={ClusterIP,NodePort}'
  --set 'admissionPolicy.rules.tolerations.allowedKeys={dedicated}' "${POLICY_VALUES[@]}"
  --set 'admissionPolicy.rules.serviceAccounts.allowed={mcp-upstream}'
  --set 'admissionPolicy.rules.podLabels.allowed={team,example.com/*}'
  --set admissionPolicy.rules.affinity.enabled=false --set admissionPolicy.rules.hostDelegation.enabled=false
  --set "operator.watchNamespaces={$T1,$T2}")
check "helm lint --strict with every new value set" helm lint --strict "$CHART" "${ALL_VALUES[@]}"
# A server-side dry run creates nothing, and a Pod's ServiceAccount must exist: create the test's.
kubectl -n "$SYSTEM_NS" create serviceaccount other-kube-mcp-test >/dev/null
helm template other "$CHART" -n "$SYSTEM_NS" "${ALL_VALUES[@]}" >"$E2E/all.yaml" 2>"$E2E/all.err" || cat "$E2E/all.err"
check "kubectl apply --dry-run=server accepts every rendered object, helm test hooks included" \
  kubectl apply --dry-run=server -f "$E2E/all.yaml"
check "the rendering passes networkPolicy.ingressCIDRs to the operator" grep -q -- '--ingress-cidr=10.0.0.0/16,fd00:10::/64' "$E2E/all.yaml"
check "the rendering passes runtimeTransports to the operator" grep -q -- '--runtime-transports=modern,streamable' "$E2E/all.yaml"
check "the rendering pulls both images by digest and has the operator's PDB" bash -c \
  "grep -q 'image: \"ghcr.io/kube-mcp/kube-mcp@$DIGEST\"' $E2E/all.yaml &&
   grep -q -- '--runtime-image=ghcr.io/kube-mcp/kube-mcp@$DIGEST' $E2E/all.yaml && grep -q '^kind: PodDisruptionBudget' $E2E/all.yaml"
check "replicas > 1 without leader election is refused" bash -c \
  "! helm template x '$CHART' --set operator.replicas=2 --set operator.leaderElection=false 2>$E2E/replicas.err; grep -q 'needs operator.leaderElection' $E2E/replicas.err"
check "aggregated roles: namespace editors manage and scale MCPServers, viewers read them" bash -c "
  kubectl -n $T2 create rolebinding carol-edit --clusterrole=edit --user=carol >/dev/null &&
  kubectl -n $T2 create rolebinding dave-view --clusterrole=view --user=dave >/dev/null &&
  for i in \$(seq 30); do [[ \$(kubectl auth can-i create mcpservers.kube-mcp.io -n $T2 --as carol) == yes ]] && break; sleep 0.5; done &&
  [[ \$(kubectl auth can-i update mcpservers.kube-mcp.io/scale -n $T2 --as carol) == yes ]] &&
  [[ \$(kubectl auth can-i list mcpservers.kube-mcp.io -n $T2 --as dave) == yes ]] &&
  [[ \$(kubectl auth can-i create mcpservers.kube-mcp.io -n $T2 --as dave) == no ]]"

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
# tenant, in version $MCP_VERSION (default v1alpha1); stderr goes to $E2E/NAME.err.
as_tenant_apply() {
  jq -n --arg name "$1" --argjson extra "$2" --arg version "kube-mcp.io/${MCP_VERSION:-v1alpha1}" '{
      apiVersion: $version, kind: "MCPServer", metadata: {name: $name},
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
# in_version VERSION COMMAND...: runs COMMAND with servers written as kube-mcp.io/VERSION.
in_version() {
  local MCP_VERSION=$1
  shift
  "$@"
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
check "refused: an imagePullSecret the tenant cannot get" refused s-pull \
  '{"imagePullSecrets": [{"name": "platform"}]}' "spec.imagePullSecrets" "rule secrets"
check "refused: a gateway host outside the allowed domains" refused s-gateway \
  '{"exposure": "gateway", "gateway": {"host": "mcp.example.com", "parentRefs": [{"name": "shared"}]}}' \
  "spec.gateway.host" "rule ingressHosts"
check "refused: an image outside the allow-list" refused s-image \
  '{"image": "registry.evil.example/runtime:1"}' "spec.image" "rule images" "registry.evil.example/runtime:1"
check "refused in kube-mcp.io/v1beta1 too: the policy matches every served version" \
  in_version v1beta1 refused s-image-beta '{"image": "registry.evil.example/runtime:1"}' "spec.image" "rule images"
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
check "refused: TLS for a host while no host is delegated to the namespace" refused s-tls \
  "{\"ingress\": {\"host\": \"tls.$DOMAIN\", \"tls\": {\"secretName\": \"tls\"}}}" \
  "spec.ingress.tls" "rule hostDelegation" "no host is delegated to namespace $T1"
check "refused: another tag of the runtime repository (a downgrade)" refused s-downgrade \
  '{"image": "ghcr.io/kube-mcp/kube-mcp:0.0.1"}' "spec.image" "rule images"
check "refused: a ServiceAccount (cloud and mesh identity)" refused s-sa \
  '{"serviceAccountName": "billing"}' "spec.serviceAccountName" "rule serviceAccounts"
check "refused: a priority class" refused s-priority \
  '{"priorityClassName": "system-cluster-critical"}' "spec.priorityClassName" "rule priorityClasses"
check "refused: a pod label (could join another Service)" refused s-label \
  '{"podLabels": {"app": "shop"}}' "spec.podLabels" "rule podLabels" "app"
check "refused: a pod annotation (mesh opt-out)" refused s-podann \
  '{"podAnnotations": {"sidecar.istio.io/inject": "false"}}' "spec.podAnnotations" "rule podAnnotations"
check "refused: a node selector" refused s-node \
  '{"nodeSelector": {"pool": "payments"}}' "spec.nodeSelector" "rule nodeSelector"
check "refused: an affinity" refused s-affinity \
  '{"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["payments"]}]}]}}}}' \
  "spec.affinity" "rule affinity"
check "refused: a Service annotation" refused s-svcann \
  '{"service": {"annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "false"}}}' \
  "spec.service.annotations" "rule serviceAnnotations"
check "refused: turning the NetworkPolicy off" refused s-netpol \
  '{"networkPolicy": {"enabled": false}}' "spec.networkPolicy.enabled" "rule networkPolicy"
check "refused: an env configMapKeyRef to a ConfigMap the tenant cannot get" refused s-cm \
  '{"env": [{"name": "C", "valueFrom": {"configMapKeyRef": {"name": "platform-config", "key": "k"}}}]}' \
  "spec.env[].valueFrom.configMapKeyRef" "rule configMaps"
for name in s-secret s-env s-both s-pull s-gateway s-image s-lookalike s-host s-host2 s-annotation s-lb s-toleration s-tls \
  s-downgrade s-sa s-priority s-label s-podann s-node s-affinity s-svcann s-netpol s-cm; do
  absent "$T1" mcpserver "$name" || { echo "refused $name exists" && FAILED=$((FAILED + 1)); }
done

ALLOWED=$(jq -n --argjson tool "${HTTP_TOOL//SECRET/upstream}" --arg host "weather.$DOMAIN" '{
  tools: [$tool], secrets: ["upstream"],
  env: [{name: "T", valueFrom: {secretKeyRef: {name: "upstream", key: "token"}}}],
  image: "ghcr.io/kube-mcp/kube-mcp:e2e", service: {type: "ClusterIP"},
  ingress: {host: $host, path: "/weather", annotations: {"nginx.ingress.kubernetes.io/proxy-read-timeout": "7200"}}}')
check "accepted: readable Secrets, the chart's runtime image, host, annotation and Service type" \
  as_tenant_apply allowed "$ALLOWED"
check "the tenant may update their own server" bash -c \
  "kubectl --as $TENANT -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Allowed\"}}'"
check "another user without access to Secret upstream cannot edit that server" bash -c \
  "kubectl -n $T1 create rolebinding bob-mcp --role=mcp-author --user=bob >/dev/null &&
   ! kubectl --as bob -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Bob was here\"}}' 2>$E2E/bob.err;
   cat $E2E/bob.err; grep -q 'rule secrets' $E2E/bob.err"

log "host delegation: the platform annotates the namespace with its hosts"
kubectl annotate namespace "$T1" "kube-mcp.io/hosts=team1.$DOMAIN" >/dev/null
# The API server reads namespaces from an informer: allow it a moment.
check "a host delegated to the namespace may have TLS" eventually 20 as_tenant_apply d-tls \
  "{\"ingress\": {\"host\": \"mcp.team1.$DOMAIN\", \"tls\": {\"secretName\": \"team1-tls\"}}}"
check "refused: a cert-manager issuer annotation, even for a delegated host (not in the default allow-list)" \
  refused d-issuer "{\"ingress\": {\"host\": \"a.team1.$DOMAIN\", \"annotations\": {\"cert-manager.io/cluster-issuer\": \"public\"}}}" \
  "rule ingressAnnotations" "cert-manager.io/cluster-issuer"
check "refused: a host not delegated to the namespace" refused d-other \
  "{\"ingress\": {\"host\": \"other.$DOMAIN\"}}" "spec.ingress.host" "rule hostDelegation" "delegated are team1.$DOMAIN"
log "ratcheting: server allowed (host weather.$DOMAIN) is now outside the delegated hosts"
check "a label on it is still accepted (metadata-only update)" \
  kubectl --as "$TENANT" -n "$T1" label mcpserver allowed team=one
check "a finalizer is added and removed (as the garbage collector would)" bash -c "
  kubectl -n $T1 patch mcpserver allowed --type=merge -p '{\"metadata\": {\"finalizers\": [\"example.com/hold\"]}}' >/dev/null &&
  kubectl -n $T1 patch mcpserver allowed --type=json -p '[{\"op\": \"remove\", \"path\": \"/metadata/finalizers\"}]' >/dev/null"
check "a change of its spec is checked, and refused" bash -c "
  ! kubectl --as $TENANT -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Changed\"}}' 2>$E2E/ratchet.err;
  cat $E2E/ratchet.err; grep -q 'rule hostDelegation' $E2E/ratchet.err"
kubectl -n "$T1" delete mcpserver d-tls >/dev/null
kubectl annotate namespace "$T1" kube-mcp.io/hosts- >/dev/null
check "without the annotation, a host without TLS is accepted again" eventually 20 bash -c \
  "kubectl --as $TENANT -n $T1 patch mcpserver allowed --type=merge -p '{\"spec\": {\"title\": \"Allowed again\"}}' >/dev/null"
for name in d-other d-issuer; do
  absent "$T1" mcpserver "$name" || { echo "refused $name exists" && FAILED=$((FAILED + 1)); }
done

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
# Before the operator starts: it watches HTTPRoutes only when the API server serves them then.
log "Gateway API: the CRDs from the sigs.k8s.io/gateway-api Go module (cached by version)"
GATEWAY_API_VERSION=v1.6.3
GATEWAY_CRDS=$CACHE/gateway-api-$GATEWAY_API_VERSION
if [[ ! -f $GATEWAY_CRDS/gateway.networking.k8s.io_httproutes.yaml ]]; then
  dir=$(GOTOOLCHAIN=local GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/pkg/mod GOFLAGS=-modcacherw \
    go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" | jq -r .Dir)
  mkdir -p "$GATEWAY_CRDS.tmp" && cp "$dir"/config/crd/standard/gateway.networking.k8s.io_*.yaml "$GATEWAY_CRDS.tmp/" &&
    rm -rf "$GATEWAY_CRDS" && mv "$GATEWAY_CRDS.tmp" "$GATEWAY_CRDS"
fi
check "the standard-channel Gateway API CRDs install" bash -c \
  "kubectl apply --server-side -f '$GATEWAY_CRDS' >/dev/null && kubectl wait --for=condition=Established crd/httproutes.gateway.networking.k8s.io --timeout=60s"

log "the operator runs locally as the chart's ServiceAccount"
SA_KUBECONFIG=$E2E/operator.kubeconfig
"$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$SA_KUBECONFIG"
ADMIN_PORT=$((20000 + RANDOM % 10000))
KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=tenant-operator \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name kube-mcp-leader \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json \
  --network-policies=true --ingress-namespace ingress-nginx,gateway-system --ingress-cidr 192.0.2.0/24 \
  --monitoring-namespace monitoring \
  --log-level info,mcp_operator=debug >>"$E2E/operator.log" 2>&1 &
OPERATOR_PID=$!
check "operator /readyz answers" eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/readyz"
check "the tenant's allowed server is accepted by the operator" eventually 60 accepted_is "$T1" allowed "True Compiled"

log "a session key planted by someone who may only create Secrets is never mounted"
kubectl -n "$T1" create role create-secrets --verb=create --resource=secrets >/dev/null
kubectl -n "$T1" create rolebinding mallory-secrets --role=create-secrets --user=mallory >/dev/null
check "mallory plants Secret planted-session-key (the name older operators used) first" \
  kubectl --as mallory -n "$T1" create secret generic planted-session-key --from-literal=key=0123456789abcdef0123456789abcdef
check "the tenant applies server planted" as_tenant_apply planted '{}'
# mounts_own_key: the Deployment of server planted mounts one key, the operator's (owned, named
# with a random part), not the planted Secret.
mounts_own_key() {
  local key
  key=$(kubectl -n "$T1" get deployment planted -o jsonpath='{.metadata.annotations.kube-mcp\.io/session-key}') &&
    [[ $key == planted-session-key-* ]] &&
    holds "$T1" deployment planted "[.spec.template.spec.volumes[] | .secret.secretName // empty] == [\"$key\"]" &&
    holds "$T1" secret "$key" '.metadata.ownerReferences[0].kind == "MCPServer" and .immutable'
}
check "its Deployment mounts an operator-made key, not the planted one" eventually 60 mounts_own_key
check "the planted Secret is left as it was" bash -c \
  "kubectl -n $T1 get secret planted-session-key -o json | jq -e '.metadata.ownerReferences == null' >/dev/null"
check "deleting server planted" kubectl -n "$T1" delete mcpserver planted --wait=true --timeout=60s

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


# ----------------------------------------------------------------------------------------------
# The weather example, exposed through a gateway under a path prefix.
expose_weather() { # expose_weather NAMESPACE JSON_MERGED_INTO_SPEC (null values are removed)
  kubectl create --dry-run=client -o json -f "$ROOT/examples/weather.yaml" |
    jq --argjson extra "$2" 'del(.metadata.namespace) | .spec += $extra | del(.spec[] | nulls)' |
    kubectl -n "$1" apply -f - >/dev/null
}
GATEWAY_SPEC='{"exposure": "gateway", "gateway": {"host": "gw.'$DOMAIN'", "path": "/weather",
  "parentRefs": [{"name": "shared", "namespace": "gateway-system", "sectionName": "https"}]}}'
check "apply the weather example with exposure: gateway" expose_weather "$T2" "$GATEWAY_SPEC"
check "the API server accepted the operator's HTTPRoute" eventually 60 holds "$T2" httproute weather \
  '.spec.hostnames == ["gw.'$DOMAIN'"] and .spec.parentRefs[0].name == "shared" and
   ([.spec.rules[0].matches[].path.value] == ["/weather/mcp", "/weather/sse", "/weather/messages"]) and
   .spec.rules[0].timeouts.request == "0s" and .spec.rules[0].backendRefs[0].name == "weather" and
   .metadata.ownerReferences[0].kind == "MCPServer"'
check "an HTTPRoute deleted by hand is put back (the operator watches HTTPRoutes)" bash -c "
  kubectl -n $T2 delete httproute weather >/dev/null &&
  for i in \$(seq 60); do kubectl -n $T2 get httproute weather >/dev/null 2>&1 && exit 0; sleep 0.5; done; exit 1"
check "status url is the gateway URL, and no Ingress exists" eventually 30 bash -c \
  "[[ \$(kubectl -n $T2 get mcps weather -o jsonpath='{.status.url}') == https://gw.$DOMAIN/weather/mcp ]] && ! kubectl -n $T2 get ingress weather"
# operator/tests/cluster/exposed.rs: a Gateway that refuses a route, then takes it, and an
# Ingress given an address, in the Exposed condition (Rust, kube::Api).
exposed_tests() {
  KUBE_MCP_E2E_NAMESPACE=$T2 KUBE_MCP_E2E_OPERATOR_NAMESPACE=$SYSTEM_NS KUBE_MCP_E2E_DOMAIN=$DOMAIN \
    KUBE_MCP_E2E_OPERATOR_ADMIN=127.0.0.1:$ADMIN_PORT KUBE_MCP_E2E_DIR=$E2E/cluster \
    KUBE_MCP_E2E_VERIFY_GRACE_S=150 MCP_RUNTIME_BIN=$RUNTIME_BIN \
    nice cargo test --quiet --manifest-path "$ROOT/Cargo.toml" -p mcp-operator --test cluster \
    -- --ignored --test-threads=1 exposed::
}
check "operator/tests/cluster exposed:: passes (Exposed from route and Ingress status)" exposed_tests
check "the API server refuses exposure: gateway without spec.gateway" bash -c \
  "! kubectl -n $T2 patch mcps weather --type=json -p '[{\"op\": \"remove\", \"path\": \"/spec/gateway\"}]' 2>$E2E/gw.err; grep -q 'needs spec.gateway' $E2E/gw.err"

log "the runtime serves under the prefix itself (no rewriting anywhere)"
kubectl -n "$T2" get configmap weather-manifest -o jsonpath='{.data.manifest\.yaml}' >"$E2E/weather.yaml"
PREFIX=$(kubectl -n "$T2" get deployment weather -o json | jq -r '.spec.template.spec.containers[0].args as $a | $a[($a | index("--path-prefix")) + 1]')
check "the Deployment passes --path-prefix /weather" test "$PREFIX" = /weather
RT_PORT=$((ADMIN_PORT + 1))
"$RUNTIME_BIN" serve --manifest "$E2E/weather.yaml" --listen "127.0.0.1:$RT_PORT" \
  --admin-listen "127.0.0.1:$((RT_PORT + 1))" --path-prefix "$PREFIX" >"$E2E/runtime.log" 2>&1 &
RUNTIME_PID=$!
check "mcp-runtime is ready" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$((RT_PORT + 1))/readyz"
check "GET /weather/sse announces /weather/messages" bash -c \
  "curl -sN --max-time 2 'http://127.0.0.1:$RT_PORT/weather/sse' | grep -m1 -q '^data: /weather/messages?sessionId='"
if [[ -f $ROOT/tests/python/requirements.txt ]]; then
  VENV=$CACHE/venv-$(sha256sum "$ROOT/tests/python/requirements.txt" | cut -c1-12)
  REQUIREMENTS=(-r "$ROOT/tests/python/requirements.txt")
else
  VENV=$CACHE/venv-e2e-mcp-2.3.0
  REQUIREMENTS=(mcp==2.3.0)
fi
if ! "$VENV/bin/python" -c 'import mcp' 2>/dev/null; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
fi
check "the official MCP Python SDK works at /weather/mcp" \
  timeout 120 "$VENV/bin/python" "$ROOT/tests/e2e/mcp_client_check.py" "http://127.0.0.1:$RT_PORT/weather/mcp" Hello
kill "$RUNTIME_PID" 2>/dev/null || true
wait "$RUNTIME_PID" 2>/dev/null || true
RUNTIME_PID=

check "back to exposure: ingress prunes the HTTPRoute and writes an Ingress with exact paths" bash -c "
  kubectl -n $T2 patch mcps weather --type=json -p '[{\"op\": \"remove\", \"path\": \"/spec/gateway\"}, {\"op\": \"replace\", \"path\": \"/spec/exposure\", \"value\": \"ingress\"}, {\"op\": \"add\", \"path\": \"/spec/ingress\", \"value\": {\"host\": \"gw.$DOMAIN\", \"path\": \"/weather\"}}]' >/dev/null &&
  for i in \$(seq 60); do
    ! kubectl -n $T2 get httproute weather >/dev/null 2>&1 && kubectl -n $T2 get ingress weather -o json 2>/dev/null |
      jq -e '[.spec.rules[0].http.paths[] | .path + \" \" + .pathType] == [\"/weather/mcp Exact\", \"/weather/sse Exact\", \"/weather/messages Exact\"] and (.metadata.annotations | keys | map(select(test(\"rewrite|regex\"))) | length == 0)' && exit 0
    sleep 1
  done; exit 1"

# ----------------------------------------------------------------------------------------------
log "NetworkPolicy per server"
check "the server has a NetworkPolicy: MCP port for the ingress namespaces and address ranges and its own pods, admin port for monitoring and the operator" \
  eventually 30 holds "$T2" networkpolicy weather '
    .spec.podSelector.matchLabels["kube-mcp.io/server"] == "weather" and .spec.policyTypes == ["Ingress"] and
    ([.spec.ingress[0].from[] | select(.namespaceSelector) | .namespaceSelector.matchLabels["kubernetes.io/metadata.name"]] == ["ingress-nginx", "gateway-system"]) and
    ([.spec.ingress[0].from[] | select(.podSelector and .namespaceSelector == null) | .podSelector.matchLabels["kube-mcp.io/server"]] == ["weather"]) and
    ([.spec.ingress[0].from[] | select(.ipBlock) | .ipBlock.cidr] == ["192.0.2.0/24"]) and ([.spec.ingress[1].from[] | select(.ipBlock)] == []) and
    .spec.ingress[0].ports[0].port == "http" and .spec.ingress[1].ports[0].port == "admin" and
    ([.spec.ingress[1].from[] | .namespaceSelector.matchLabels["kubernetes.io/metadata.name"]] == ["monitoring", "'"$SYSTEM_NS"'"]) and
    .spec.ingress[1].from[1].podSelector.matchLabels["app.kubernetes.io/component"] == "operator"'
check "spec.networkPolicy.from adds peers" bash -c "
  kubectl -n $T2 patch mcps weather --type=merge -p '{\"spec\": {\"networkPolicy\": {\"from\": [{\"podSelector\": {\"matchLabels\": {\"role\": \"agent\"}}}]}}}' >/dev/null &&
  for i in \$(seq 60); do kubectl -n $T2 get networkpolicy weather -o json | jq -e '.spec.ingress[0].from[-1].podSelector.matchLabels.role == \"agent\"' >/dev/null && exit 0; sleep 0.5; done; exit 1"
# The admission policy refuses the opt-out (rule networkPolicy); a platform that grants it turns
# the rule off.
check "helm upgrade with the networkPolicy rule off" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}" \
  --set admissionPolicy.rules.networkPolicy.enabled=false
check "opting out prunes it" eventually 20 bash -c "
  kubectl -n $T2 patch mcps weather --type=merge -p '{\"spec\": {\"networkPolicy\": {\"enabled\": false}}}' >/dev/null &&
  for i in \$(seq 60); do kubectl -n $T2 get networkpolicy weather >/dev/null 2>&1 || exit 0; sleep 0.5; done; exit 1"
check "helm upgrade back to the defaults" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}"

# ----------------------------------------------------------------------------------------------
log "scale subresource; an unset replicas is left to whoever scales the Deployment"
deployment_replicas() { [[ $(kubectl -n "$1" get deployment "$2" -o jsonpath='{.spec.replicas}') == "$3" ]]; }
check "kubectl scale mcps/weather --replicas 3" kubectl -n "$T2" scale mcps/weather --replicas 3
check "the Deployment follows (3)" eventually 30 deployment_replicas "$T2" weather 3
check "status.replicas and the scale subresource's selector" eventually 30 holds "$T2" mcps weather \
  '.status.replicas == 3 and .status.selector == "app.kubernetes.io/name=mcp-server,kube-mcp.io/server=weather"'
check "kubectl get --subresource=scale reads it" bash -c \
  "kubectl -n $T2 get mcps weather --subresource=scale -o json | jq -e '.spec.replicas == 3 and .status.replicas == 3 and (.status.selector | contains(\"kube-mcp.io/server=weather\"))'"
expose_weather "$T1" '{"replicas": null}'
check "a server without replicas starts with 1" eventually 60 deployment_replicas "$T1" weather 1
check "something else scales its Deployment to 4" kubectl -n "$T1" scale deployment weather --replicas 4
check "a spec change is reconciled" kubectl -n "$T1" patch mcps weather --type=merge -p '{"spec": {"title": "Scaled elsewhere"}}'
observed_generation() { [[ $(kubectl -n "$1" get mcps "$2" -o jsonpath='{.status.observedGeneration}') == $(kubectl -n "$1" get mcps "$2" -o jsonpath='{.metadata.generation}') ]]; }
check "status observes it" eventually 30 observed_generation "$T1" weather
check "and the Deployment keeps 4 replicas, which status reports" bash -c \
  "sleep 2; [[ \$(kubectl -n $T1 get deployment weather -o jsonpath='{.spec.replicas}') == 4 && \$(kubectl -n $T1 get mcps weather -o jsonpath='{.status.replicas}') == 4 ]]"

# ----------------------------------------------------------------------------------------------
log "suspend"
CM_BEFORE=$(kubectl -n "$T1" get configmap weather-manifest -o jsonpath='{.metadata.resourceVersion}')
check "suspend: true" kubectl -n "$T1" patch mcps weather --type=merge -p '{"spec": {"suspend": true, "title": "While suspended"}}'
check "status says Suspended" eventually 30 holds "$T1" mcps weather \
  '.status.conditions[] | select(.type == "Suspended") | .status == "True"'
check "the ConfigMap was not touched" bash -c \
  "sleep 2; [[ \$(kubectl -n $T1 get configmap weather-manifest -o jsonpath='{.metadata.resourceVersion}') == $CM_BEFORE ]]"
check "resuming applies what changed and drops the condition" bash -c "
  kubectl -n $T1 patch mcps weather --type=merge -p '{\"spec\": {\"suspend\": false}}' >/dev/null &&
  for i in \$(seq 60); do
    kubectl -n $T1 get configmap weather-manifest -o jsonpath='{.data.manifest\\.yaml}' | grep -q 'While suspended' &&
      kubectl -n $T1 get mcps weather -o json | jq -e '[.status.conditions[] | select(.type == \"Suspended\")] | length == 0' >/dev/null && exit 0
    sleep 0.5
  done; exit 1"

# ----------------------------------------------------------------------------------------------
log "an operator restricted to a list of namespaces, with a Role in each"
T3=tenant-c
kubectl create namespace "$T3" >/dev/null
kill -TERM "$OPERATOR_PID" 2>/dev/null || true
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=
check "helm upgrade to operator.watchNamespaces={$T1,$T3}" \
  helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e "${POLICY_VALUES[@]}" \
  --set "operator.watchNamespaces={$T1,$T3}"
check "RBAC: a Role in $T1 and $T3, nothing in $T2, no cluster-wide rights" bash -c "
  kubectl -n $T1 get role $RELEASE >/dev/null && kubectl -n $T3 get role $RELEASE >/dev/null &&
  ! kubectl get clusterrole $RELEASE >/dev/null 2>&1 &&
  [[ \$(KUBECONFIG=$SA_KUBECONFIG kubectl auth can-i watch mcpservers.kube-mcp.io -n $T3) == yes &&
     \$(KUBECONFIG=$SA_KUBECONFIG kubectl auth can-i watch mcpservers.kube-mcp.io -n $T2) == no &&
     \$(KUBECONFIG=$SA_KUBECONFIG kubectl auth can-i watch mcpservers.kube-mcp.io -A) == no ]]"
check "the Deployment passes --namespaces=$T1,$T3" bash -c \
  "kubectl -n $SYSTEM_NS get deployment $RELEASE -o json | jq -e '.spec.template.spec.containers[0].args | index(\"--namespaces=$T1,$T3\")'"
expose_weather "$T3" '{"replicas": null}'
claim "$T2" unwatched /unwatched
KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=tenant-operator-scoped \
  "$OPERATOR_BIN" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name kube-mcp-leader \
  --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json --namespaces "$T1,$T3" \
  --log-level info,mcp_operator=debug >>"$E2E/operator-scoped.log" 2>&1 &
OPERATOR_PID=$!
check "the restricted operator is ready" eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/readyz"
check "it serves a new server in $T3" eventually 60 bash -c \
  "[[ \$(kubectl -n $T3 get mcps weather -o jsonpath='{.status.observedGeneration}') == 1 ]] && kubectl -n $T3 get deployment weather >/dev/null"
check "and changes in $T1" bash -c "
  kubectl -n $T1 patch mcps weather --type=merge -p '{\"spec\": {\"title\": \"Restricted\"}}' >/dev/null &&
  for i in \$(seq 60); do kubectl -n $T1 get configmap weather-manifest -o jsonpath='{.data.manifest\\.yaml}' | grep -q Restricted && exit 0; sleep 0.5; done; exit 1"
check "it leaves $T2 alone" bash -c \
  "sleep 2; [[ -z \$(kubectl -n $T2 get mcps unwatched -o jsonpath='{.status}') ]] && ! kubectl -n $T2 get deployment unwatched"
check "no watch was refused" bash -c "! grep -E 'forbidden|watch failed' $E2E/operator-scoped.log"

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
