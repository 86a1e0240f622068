#!/usr/bin/env bash
# tests/e2e/upgrade.sh: an upgrade from the previous chart, and the ways back, lose nothing.
#
# The previous release is be5ff7e, the last commit whose chart templated the CRD (with
# helm.sh/resource-policy: keep): its chart is tests/e2e/upgrade/kube-mcp-0.1.0.tgz (`helm
# package` of charts/kube-mcp there) and its operator is built from that commit in the test
# (tests/lib/previous-operator.sh, cached). On a real control plane: install that chart, apply
# servers (one with spec.auth) and let that operator reconcile them; `helm upgrade` to this chart
# and run this operator, both as the chart's ServiceAccount. It raises the CRD to its revision;
# every server keeps every field, is served with its auth and rolls to this operator's pods.
# Then the ways back: `helm rollback` fails on the CRD, which is no longer the release's (and the
# CRD revision policy would refuse to lower it: the old schema would drop fields on the next
# write); the documented way back to the old chart (crds.install=false) leaves the CRD alone; the
# old operator then runs over the newer CRD and the status this operator wrote, keeps every field
# and reconciles a server written as kube-mcp.io/v1beta1, a version it never knew. Last, the
# storage version moves to v1beta1 by the steps CONTRIBUTING.md gives, and no field is lost.
#
# Usage: tests/e2e/upgrade.sh     (KEEP_CLUSTER=1 leaves the control plane running afterwards)
# Prints `ok - ...` / `not ok - ...` lines and ends with `N passed, N failed`; exits 1 on failure.
# I/O: a control plane in $KUBE_MCP_TEST_RUN (default /tmp/kube-mcp-e2e), logs under it, and an
# operator process on 127.0.0.1, all stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBE_MCP_TEST_RUN=${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-e2e}
CP="$ROOT/tests/control-plane.sh"
E2E=$KUBE_MCP_TEST_RUN/upgrade
E2E_NAME=upgrade
SYSTEM_NS=kube-mcp-system
RELEASE=kube-mcp
SA=kube-mcp
NS=upgrade-demo
PREVIOUS=$ROOT/tests/e2e/upgrade/kube-mcp-0.1.0.tgz
CHART=$ROOT/charts/kube-mcp
CRD=crd/mcpservers.kube-mcp.io
# shellcheck source=tests/lib/e2e.sh
source "$ROOT/tests/lib/e2e.sh"
# shellcheck source=tests/lib/cluster.sh
source "$ROOT/tests/lib/cluster.sh"
# shellcheck source=tests/lib/previous-operator.sh
source "$ROOT/tests/lib/previous-operator.sh"

OPERATOR_PID=
cleanup() {
  local rc=$?
  [[ -n $OPERATOR_PID ]] && kill "$OPERATOR_PID" 2>/dev/null || true
  cluster_stop
  exit "$rc"
}

cluster_prerequisites
previous_operator "$PREVIOUS_RELEASE"
cluster_fresh

revision_is() { [[ $(kubectl get "$CRD" -o jsonpath='{.metadata.annotations.kube-mcp\.io/crd-revision}') == "$1" ]]; }
SHIPPED_REVISION=$(sed -n 's/^    kube-mcp.io\/crd-revision: .\([0-9]*\).$/\1/p' "$CHART/crds/mcpservers.kube-mcp.io.yaml")
# specs: the first servers' names and specs, sorted, as one JSON document.
specs() {
  kubectl -n "$NS" get mcpservers -o json |
    jq -S '[.items[] | select(.metadata.name != "late") | {name: .metadata.name, spec}] | sort_by(.name)'
}
specs_kept() { diff <(specs) "$E2E/specs-before.json"; }

# ----------------------------------------------------------------------------------------------
log "the previous chart, with its templated CRD"
check "helm install of the previous chart (0.1.0, be5ff7e)" \
  helm install "$RELEASE" "$PREVIOUS" -n "$SYSTEM_NS" --create-namespace --set image.tag=e2e
check "its CRD is established" kubectl wait --for=condition=Established "$CRD" --timeout=60s
check "and has no revision" revision_is ""
kubectl create namespace "$NS" >/dev/null
apply_servers() {
  kubectl -n "$NS" apply --server-side -f - <<'YAML'
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: secured}
spec:
  title: Secured
  description: A server every request of which needs a token
  auth:
    issuer: https://idp.example.com
    audiences: [https://mcp.example.com/secured]
  tools:
    - name: hi
      description: Says hi
      content: [{type: text, text: hi}]
---
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: plain}
spec:
  replicas: 2
  sessions: {idleTimeout: 10m}
  resources:
    - uri: docs://readme
      name: readme
      text: read me
  prompts:
    - name: greet
      messages: [{role: user, content: {type: text, text: hello}}]
YAML
}
check "servers are applied under the previous CRD" apply_servers
specs >"$E2E/specs-before.json"
check "their specs were stored whole (spec.auth among them)" bash -c \
  "jq -e '.[] | select(.name == \"secured\") | .spec.auth.issuer == \"https://idp.example.com\"' '$E2E/specs-before.json' >/dev/null"

SA_KUBECONFIG=$E2E/operator.kubeconfig
"$CP" sa-kubeconfig "$SYSTEM_NS" "$SA" "$SA_KUBECONFIG"
ADMIN_PORT=$((20000 + RANDOM % 10000))
# start_operator BINARY: runs an operator as the chart's ServiceAccount until stop_operator.
start_operator() {
  KUBECONFIG=$SA_KUBECONFIG POD_NAMESPACE=$SYSTEM_NS POD_NAME=upgrade-operator \
    "$1" run --admin-listen "127.0.0.1:$ADMIN_PORT" --lease-name kube-mcp-leader \
    --runtime-image ghcr.io/kube-mcp/kube-mcp:e2e --log-format json \
    --log-level info,mcp_operator=debug >>"$E2E/operator.log" 2>&1 &
  OPERATOR_PID=$!
  eventually 60 curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/readyz"
}
stop_operator() {
  kill -TERM "$OPERATOR_PID" 2>/dev/null || true
  wait "$OPERATOR_PID" 2>/dev/null || true
  OPERATOR_PID=
}
both_accepted() {
  [[ $(condition "$NS" secured Accepted) == "True Compiled" && $(condition "$NS" plain Accepted) == "True Compiled" ]]
}
# deployments_of_this_operator: both Deployments carry the pod-template hash this operator writes.
deployments_of_this_operator() {
  kubectl -n "$NS" get deployment secured plain -o json |
    jq -e '[.items[].metadata.annotations["kube-mcp.io/template-hash"] // empty] | length == 2' >/dev/null
}

deployments_of_previous_operator() {
  kubectl -n "$NS" get deployment secured plain -o json 2>/dev/null |
    jq -e '.items | length == 2 and all(.metadata.annotations["kube-mcp.io/template-hash"] == null)' >/dev/null
}

log "the previous operator (${PREVIOUS_RELEASE:0:7}) reconciles them"
check "the previous operator starts" start_operator "$PREVIOUS_OPERATOR_BIN"
check "it accepts both servers" eventually 60 both_accepted
check "and makes their Deployments (without this operator's template hash)" \
  eventually 30 deployments_of_previous_operator
check "its status writes kept every field" specs_kept
stop_operator

# ----------------------------------------------------------------------------------------------
log "helm upgrade to this chart, then this operator"
check "helm upgrade to this chart" helm upgrade "$RELEASE" "$CHART" -n "$SYSTEM_NS" --set image.tag=e2e
check "the upgrade kept the CRD (the old release's keep policy)" kubectl get "$CRD"
check "this operator starts" start_operator "$OPERATOR_BIN"
check "the operator raised the CRD to revision ${SHIPPED_REVISION:-none found}" \
  eventually 30 revision_is "$SHIPPED_REVISION"
fragment_crds_at() {
  local crd
  for crd in mcptoolsets.kube-mcp.io mcptoolsetgrants.kube-mcp.io mcpapprovals.kube-mcp.io; do
    [[ $(kubectl get crd "$crd" -o jsonpath='{.metadata.annotations.kube-mcp\.io/crd-revision}') == "$1" ]] || return 1
    kubectl wait --for=condition=Established "crd/$crd" --timeout=30s >/dev/null || return 1
  done
}
check "and installed the MCPToolSet and MCPApproval CRDs at that revision (helm upgrade does not)" \
  eventually 30 fragment_crds_at "$SHIPPED_REVISION"
check "both servers are accepted" eventually 60 both_accepted
check "their Deployments roll to this operator's pods" eventually 60 deployments_of_this_operator
check "no server lost a field" specs_kept
check "server secured is served with its auth (the manifest the pods read)" holds "$NS" configmap secured-manifest \
  '.data["manifest.yaml"] | test("issuer: https://idp.example.com")'
check "and its pods are told their public URL for tokens" holds "$NS" deployment secured \
  '.spec.template.spec.containers[0].args | index("--public-url") != null'
check "the operator's status writes kept every field" specs_kept

# ----------------------------------------------------------------------------------------------
log "the ways back"
stop_operator
rollback_refused() {
  if helm rollback "$RELEASE" 1 -n "$SYSTEM_NS" >"$E2E/rollback.log" 2>&1; then
    echo "the rollback went through"
    return 1
  fi
  cat "$E2E/rollback.log"
  grep -q 'mcpservers.kube-mcp.io' "$E2E/rollback.log"
}
# The raised CRD is no longer the release's (the operator took it), so Helm cannot re-apply the
# old one; were it to try, the CRD revision policy would refuse to lower it.
check "helm rollback to the previous release fails on the CRD, leaving it alone" rollback_refused
check "the CRD kept its revision" revision_is "$SHIPPED_REVISION"
check "helm upgrade back to the previous chart without its CRD (crds.install=false)" \
  helm upgrade "$RELEASE" "$PREVIOUS" -n "$SYSTEM_NS" --set image.tag=e2e --set crds.install=false
check "the CRD kept its revision" revision_is "$SHIPPED_REVISION"
check "every server kept every field" specs_kept

log "the previous operator over the newer CRD (skew)"
check "the previous operator starts again" start_operator "$PREVIOUS_OPERATOR_BIN"
apply_late() {
  kubectl -n "$NS" apply --server-side -f - <<'YAML'
apiVersion: kube-mcp.io/v1beta1
kind: MCPServer
metadata: {name: late}
spec:
  tools:
    - name: hi
      content: [{type: text, text: hi}]
YAML
}
check "a server written as kube-mcp.io/v1beta1 is stored" apply_late
check "the previous operator accepts it" eventually 60 bash -c \
  "[[ \$(kubectl -n $NS get mcpservers late -o jsonpath='{.status.conditions[?(@.type==\"Accepted\")].status}') == True ]]"
check "and keeps the others accepted" both_accepted
check "its writes over this operator's status kept every field" specs_kept
stop_operator

# ----------------------------------------------------------------------------------------------
log "the storage version moves to v1beta1 as CONTRIBUTING.md says"
# As the release that makes v1beta1 the storage version would: the same CRD, storage flipped.
kubectl get "$CRD" -o json |
  jq '.spec.versions |= map(.storage = (.name == "v1beta1")) | del(.metadata.resourceVersion, .metadata.managedFields, .status)' \
    >"$E2E/crd-beta-storage.json"
check "a CRD storing v1beta1 is applied" kubectl replace -f "$E2E/crd-beta-storage.json"
stored_versions_are() { [[ $(kubectl get "$CRD" -o jsonpath='{.status.storedVersions}') == "$1" ]]; }
check "both versions are recorded as stored until the objects are rewritten" \
  stored_versions_are '["v1alpha1","v1beta1"]'
# The documented commands, verbatim but for the namespace.
migrate() {
  kubectl get mcpservers.v1beta1.kube-mcp.io -A -o json | kubectl replace -f - >/dev/null &&
    kubectl patch crd mcpservers.kube-mcp.io --subresource=status --type=merge \
      -p '{"status":{"storedVersions":["v1beta1"]}}'
}
check "every object is rewritten and v1alpha1 dropped from the stored versions" migrate
check "only v1beta1 is stored now" stored_versions_are '["v1beta1"]'
check "every server kept every field through the migration" specs_kept
check "and reads the same in v1alpha1, still served" bash -c \
  "diff <(kubectl -n $NS get mcpservers.v1alpha1.kube-mcp.io -o json | jq -S '[.items[] | select(.metadata.name != \"late\") | {name: .metadata.name, spec}] | sort_by(.name)') '$E2E/specs-before.json'"

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
