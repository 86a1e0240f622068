# tests/e2e/verified.sh: the `Verified` condition end to end (sourced by tests/e2e/run.sh, which
# provides NS, E2E, RUNTIME_BIN, RUNTIME_PID, check, eventually, holds, events_with).
#
# The operator asks the Service of an MCPServer, through the API server's service proxy, which
# declaration its pods serve (`server/discover`, `_meta["kube-mcp.io/declaration"]`). The test
# control plane has no kubelet, so this file plays its part: it serves the ConfigMap's manifest
# with a real mcp-runtime (with the flags the operator put into the Deployment), marks one of the
# server's pods Running and Ready at this host's address, and writes an EndpointSlice for the
# server's Service naming that pod and address (the API server proxies only to an endpoint whose
# pod has that IP; loopback addresses are refused, hence the host's non-loopback one). The
# endpointslice controller leaves a slice it does not manage alone. Then a declaration change
# goes StaleDeclaration until the "kubelet" (a file copy) brings the new ConfigMap to the pod.
#
# I/O: one mcp-runtime process listening on this host's non-loopback address (MCP port) and on
# 127.0.0.1 (admin port), stopped before the file's checks end; API objects in $NS.

log "Verified: the operator asks the pods which declaration they serve"
HOST_IP=$({
  ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1
  hostname -I 2>/dev/null | tr ' ' '\n'
} | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -1 || true)
check "this host has a non-loopback IPv4 address for the endpoint (${HOST_IP:-none})" test -n "$HOST_IP"
VERIFY_PORT=$(python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "${HOST_IP:-127.0.0.1}")
VERIFY_ADMIN=$((ADMIN_PORT + 7))

# What the kubelet would do: mount the ConfigMap's manifest (atomically replaced, like the volume).
serve_config_map() {
  kubectl -n "$NS" get configmap weather-manifest -o jsonpath='{.data.manifest\.yaml}' >"$E2E/served.yaml.tmp" &&
    mv "$E2E/served.yaml.tmp" "$E2E/served.yaml"
}
config_map_hash() { kubectl -n "$NS" get configmap weather-manifest -o jsonpath='{.metadata.annotations.kube-mcp\.io/declaration-hash}'; }
verified_is() {
  holds mcpserver weather ".status.conditions[] | select(.type == \"Verified\") | .status == \"$1\" and .reason == \"$2\" and (.message | contains(\"$3\"))"
}
runtime_metric() { curl -fsS --max-time 2 "http://127.0.0.1:$VERIFY_ADMIN/metrics" | grep -qF "$1"; }

# The runtime flags the operator gave the pods: who may call (Host, Origin) and the path prefix.
mapfile -t POD_FLAGS < <(kubectl -n "$NS" get deployment weather -o json | jq -r '.spec.template.spec.containers[0].args as $a
  | range(0; $a | length) | select($a[.] == "--allowed-host" or $a[.] == "--allowed-origin" or $a[.] == "--path-prefix") | $a[.], $a[. + 1]')
check "the pods' flags list allowed hosts (${#POD_FLAGS[@]} words)" test "${#POD_FLAGS[@]}" -ge 2
serve_config_map
HASH=$(config_map_hash)
"$RUNTIME_BIN" serve --manifest "$E2E/served.yaml" --listen "${HOST_IP:-127.0.0.1}:$VERIFY_PORT" \
  --admin-listen "127.0.0.1:$VERIFY_ADMIN" --reload-interval 500ms "${POD_FLAGS[@]}" >"$E2E/verified-runtime.log" 2>&1 &
RUNTIME_PID=$!
check "mcp-runtime serves the ConfigMap's manifest on $HOST_IP:$VERIFY_PORT" eventually 30 curl -fsS --max-time 2 "http://127.0.0.1:$VERIFY_ADMIN/readyz"
check "it exports the stamped hash $HASH" runtime_metric "mcp_runtime_declaration_info{hash=\"$HASH\"} 1"

POD=$(kubectl -n "$NS" get pods -l kube-mcp.io/server=weather -o jsonpath='{.items[0].metadata.name}')
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
check "pod $POD runs at $HOST_IP and is Ready (status driven by hand: no kubelet)" \
  kubectl -n "$NS" patch pod "$POD" --subresource=status --type=merge -p "{\"status\": {\"phase\": \"Running\",
    \"podIP\": \"$HOST_IP\", \"podIPs\": [{\"ip\": \"$HOST_IP\"}],
    \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}, {\"type\": \"ContainersReady\", \"status\": \"True\"}],
    \"containerStatuses\": [{\"name\": \"mcp-runtime\", \"image\": \"ghcr.io/kube-mcp/kube-mcp:e2e\", \"imageID\": \"\",
      \"ready\": true, \"started\": true, \"restartCount\": 0, \"state\": {\"running\": {\"startedAt\": \"$NOW\"}}}]}}"
check "an EndpointSlice of Service weather names the pod at $HOST_IP:$VERIFY_PORT" kubectl -n "$NS" apply -f - <<EOF
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: weather-e2e
  labels: {kubernetes.io/service-name: weather, endpointslice.kubernetes.io/managed-by: e2e.kube-mcp.io}
addressType: IPv4
ports: [{name: http, port: $VERIFY_PORT, protocol: TCP}]
endpoints: [{addresses: ["$HOST_IP"], conditions: {ready: true}, targetRef: {kind: Pod, namespace: $NS, name: $POD}}]
EOF
check "the Deployment counts the pod available" eventually 60 holds deployment weather '.status.availableReplicas >= 1'
# Why the operator sends the Service's name as Host: the proxy passes the Host it got on.
check "through the proxy, the runtime refuses the API server's address as Host (403)" eventually 20 bash -c \
  "kubectl -n $NS create --raw /api/v1/namespaces/$NS/services/weather:http/proxy/mcp -f - <<<'{}' 2>&1 | tee /dev/stderr | grep -q Forbidden"
check "Verified=True, reason Serving, naming the ConfigMap's hash" eventually 60 verified_is True Serving "$HASH"
check "the operator asked with server/discover (runtime metrics)" \
  runtime_metric 'mcp_requests_total{method="server/discover",outcome="ok"}'
check "printer columns show Verified True" bash -c "kubectl -n $NS get mcps weather | tee /dev/stderr | grep -qE '^weather +[A-Za-z]+ +True '"

check "change a tool's reply" kubectl -n "$NS" patch mcpserver weather --type=json \
  -p '[{"op": "replace", "path": "/spec/tools/0/content/0/text", "value": "Verified, {{ args.name }}!"}]'
check "the ConfigMap follows with a new hash" eventually 30 bash -c "[[ \$(kubectl -n $NS get configmap weather-manifest -o jsonpath='{.metadata.annotations.kube-mcp\\.io/declaration-hash}') != '$HASH' ]]"
NEW_HASH=$(config_map_hash)
check "the pod still serves $HASH: Verified=False, reason StaleDeclaration, naming both hashes" \
  eventually 60 verified_is False StaleDeclaration "a replica serves declaration $HASH ("
check "and not $NEW_HASH" verified_is False StaleDeclaration "not $NEW_HASH"
check "a Warning event records it" eventually 20 events_with StaleDeclaration
serve_config_map
check "the runtime reloads the new ConfigMap (metric $NEW_HASH, old series gone)" eventually 20 bash -c \
  "m=\$(curl -fsS http://127.0.0.1:$VERIFY_ADMIN/metrics) && grep -qF 'mcp_runtime_declaration_info{hash=\"$NEW_HASH\"} 1' <<<\"\$m\" && ! grep -qF '$HASH' <<<\"\$m\""
check "Verified=True again once the pod serves it (asked again with backoff)" eventually 90 verified_is True Serving "$NEW_HASH"

kill "$RUNTIME_PID" 2>/dev/null || true
wait "$RUNTIME_PID" 2>/dev/null || true
RUNTIME_PID=
check "with the runtime gone, a change" kubectl -n "$NS" patch mcpserver weather --type=merge -p '{"spec": {"title": "Weather (unverified)"}}'
check "gives Verified=False, reason Unreachable" eventually 60 verified_is False Unreachable "no MCP answer through Service $NS/weather:http"
kubectl -n "$NS" delete endpointslice weather-e2e >/dev/null
