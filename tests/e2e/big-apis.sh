# The two APIs platform teams most want to expose, each imported whole as a server plus one
# MCPToolSet per tag (`import openapi --split-by-tag`), applied to the control plane, accepted,
# rendered for the pods within a ConfigMap's limit (gzipped), and served: every tool listed by
# the official Python SDK from what the pods would read. Every stored object's size is asserted
# under the limit and printed. Sourced by tests/e2e/run.sh after its operator is up; uses its
# check, eventually, log, $E2E, $RUNTIME_BIN and $PYTHON.
#
# Specs: Kubernetes' from the Go module the control plane is built from (already in the module
# cache), GitHub's from npm (`@octokit/openapi`, fetched once into the test cache); the same
# files tests/python/test_openapi_large.py imports.

BIG_NS=e2e-apis
# One object as the API server stores it (JSON): etcd refuses requests over 1.5 MiB; this keeps a
# margin for metadata and managed fields.
OBJECT_LIMIT=1000000
# What a ConfigMap may hold (data and binaryData together), as the API server validates it.
CONFIGMAP_LIMIT=1048576
OCTOKIT_VERSION=23.0.2
SPECS=$CACHE/specs

github_spec() {
  local target=$SPECS/octokit-openapi-$OCTOKIT_VERSION/api.github.com.json
  if [[ ! -f $target ]]; then
    local work
    work=$(mktemp -d)
    (cd "$work" && npm pack "@octokit/openapi@$OCTOKIT_VERSION" --silent >/dev/null &&
      tar -xzf "octokit-openapi-$OCTOKIT_VERSION.tgz" package/generated/api.github.com.json) || return 1
    mkdir -p "$(dirname "$target")"
    mv "$work/package/generated/api.github.com.json" "$target"
    rm -rf "$work"
  fi
  echo "$target"
}

kubernetes_spec() {
  local version
  version=$(sed -n 's/^K8S_VERSION=\(v[0-9.]*\)$/\1/p' "$ROOT/tests/control-plane.sh")
  local target=$CACHE/go/pkg/mod/k8s.io/kubernetes@$version/api/openapi-spec/swagger.json
  if [[ ! -f $target ]]; then
    GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/pkg/mod GOFLAGS=-modcacherw GOTOOLCHAIN=local \
      go mod download "k8s.io/kubernetes@$version" >&2 || return 1
  fi
  echo "$target"
}

# Sizes of the stored server `api` and its sets (label api=`api`) as JSON, largest first:
# "bytes kind/name".
stored_sizes() {
  {
    kubectl -n "$BIG_NS" get mcpserver "$1" -o json
    kubectl -n "$BIG_NS" get mcptoolsets -l "api=$1" -o json | jq '.items[]'
  } | jq -r '"\(tojson | length) \(.kind)/\(.metadata.name)"' | sort -rn
}

# "N objects, largest BYTES (kind/name), together BYTES" of what the API server stored.
stored_figures() {
  local sizes
  sizes=$(stored_sizes "$1")
  echo "$(wc -l <<<"$sizes") objects, largest $(head -1 <<<"$sizes" | sed 's/ / bytes (/')), together $(awk '{s += $1} END {print s}' <<<"$sizes") bytes"
}

sets_served() {
  [[ $(kubectl -n "$BIG_NS" get mcpserver "$1" -o json |
    jq '[.status.conditions[] | select(.type == "Accepted" and .status == "True")] | length') == 1 ]] &&
    [[ $(kubectl -n "$BIG_NS" get mcpserver "$1" -o json | jq '.status.toolSets | length') == "$2" ]]
}

# The pods' manifest: gzipped in binaryData, the ConfigMap within its limit; written to $3.
pods_manifest_fits() {
  local json
  json=$(kubectl -n "$BIG_NS" get configmap "$1-manifest" -o json) || return 1
  jq -e '.binaryData["manifest.yaml.gz"]' <<<"$json" >/dev/null || { echo "not gzipped"; return 1; }
  jq -r '.binaryData["manifest.yaml.gz"]' <<<"$json" | base64 -d >"$2/manifest.yaml.gz"
  local bytes
  bytes=$(wc -c <"$2/manifest.yaml.gz")
  ((bytes <= CONFIGMAP_LIMIT)) || { echo "manifest.yaml.gz: $bytes bytes"; return 1; }
}

big_api() {
  local api=$1 spec=$2
  shift 2
  local dir=$E2E/split-$api served=$E2E/served-$api
  rm -rf "$dir" "$served" "$served-secrets"
  mkdir -p "$served"
  check "$api: import openapi --split-by-tag writes a server and its sets" \
    "$RUNTIME_BIN" import openapi "$spec" --name "$api" --methods all --split-by-tag "$dir" "$@"
  local sets tools
  # kubectl prints one object per file (a List for a file of several).
  local objects=$E2E/split-$api.json
  kubectl create --dry-run=client -o json -f "$dir" |
    jq -s '[.[] | if .kind == "List" then .items[] else . end]' >"$objects"
  sets=$(jq '[.[] | select(.kind == "MCPToolSet")] | length' "$objects")
  tools=$(jq '[.[] | .spec.tools // [] | length] | add' "$objects")
  check "$api: kubectl apply --server-side of the server and its $sets sets" \
    kubectl -n "$BIG_NS" apply --server-side -f "$dir"
  local figures largest
  figures=$(stored_figures "$api")
  largest=$(stored_sizes "$api" | head -1)
  check "$api: every stored object is at most $OBJECT_LIMIT bytes: $figures" \
    test "${largest%% *}" -le "$OBJECT_LIMIT"
  check "$api: Accepted=True, serving the $sets sets" eventually 180 sets_served "$api" "$sets"
  check "$api: the pods' manifest is gzipped within a ConfigMap ($CONFIGMAP_LIMIT bytes)" \
    eventually 60 pods_manifest_fits "$api" "$served"
  log "$api: manifest.yaml.gz $(wc -c <"$served/manifest.yaml.gz") bytes, $(gzip -dc "$served/manifest.yaml.gz" | wc -c) uncompressed"
  # The Secret the pods would mount (the Kubernetes import sends a bearer token from it).
  local secret
  for secret in $(kubectl -n "$BIG_NS" get mcpserver "$api" -o jsonpath='{.spec.secrets[*]}'); do
    mkdir -p "$served-secrets/$secret"
    echo placeholder >"$served-secrets/$secret/token"
  done
  local port=$((ADMIN_PORT + 7))
  "$RUNTIME_BIN" serve --manifest "$served" --secrets-dir "$served-secrets" --listen "127.0.0.1:$port" \
    --admin-listen "127.0.0.1:$((port + 1))" >"$E2E/served-$api.log" 2>&1 &
  local pid=$!
  check "$api: mcp-runtime serves the ConfigMap's manifest" \
    eventually 120 curl -fsS --max-time 2 "http://127.0.0.1:$((port + 1))/readyz"
  check "$api: the Python SDK lists all $tools tools" \
    timeout 300 "$PYTHON" "$ROOT/tests/e2e/count_tools.py" "http://127.0.0.1:$port/mcp" "$tools"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  kubectl -n "$BIG_NS" delete mcpserver "$api" --wait=false >/dev/null
  kubectl -n "$BIG_NS" delete mcptoolsets -l "api=$api" --wait=false >/dev/null
}

log "big APIs as a server and one MCPToolSet per tag: Kubernetes and GitHub, whole"
kubectl create namespace "$BIG_NS" >/dev/null
if K8S_SPEC=$(kubernetes_spec); then
  big_api kubernetes "$K8S_SPEC" --base-url https://kubernetes.default.svc --secret BearerToken=kube-api/token
else
  check "the Kubernetes API's spec is in the Go module cache" false
fi
if GITHUB_SPEC=$(github_spec); then
  big_api github "$GITHUB_SPEC"
else
  check "GitHub's API spec is fetched from npm" false
fi
