# tests/lib/cluster.sh: what every cluster test script does before and after its checks; sourced.
# Needs ROOT, CP (tests/control-plane.sh), KUBE_MCP_TEST_RUN, E2E and a `log` function.
#
# cluster_prerequisites  installs jq and curl (Debian) when missing, builds mcp-operator and
#                        mcp-runtime, and sets OPERATOR_BIN and RUNTIME_BIN
# cluster_fresh          starts a control plane of the script's own (stopping one another script
#                        left: their objects must not meet), has the script's `cleanup` run on
#                        exit, exports the control plane's KUBECONFIG and PATH and makes $E2E
# cluster_stop           stops the control plane, or leaves it running when KEEP_CLUSTER=1

cluster_prerequisites() {
  # jq reads the API's JSON; curl talks to the admin endpoints.
  if ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
    log "installing jq and curl"
    apt-get update -qq && apt-get install -y -qq jq curl >/dev/null
  fi
  log "building mcp-operator and mcp-runtime"
  (cd "$ROOT" && nice cargo build --quiet -p mcp-operator -p mcp-runtime)
  OPERATOR_BIN=$ROOT/target/debug/mcp-operator
  RUNTIME_BIN=$ROOT/target/debug/mcp-runtime
}

cluster_fresh() {
  "$CP" stop >/dev/null 2>&1 || true
  "$CP" start
  trap cleanup EXIT
  eval "$("$CP" env)"
  mkdir -p "$E2E"
}

cluster_stop() {
  if [[ ${KEEP_CLUSTER:-} == 1 ]]; then
    log "control plane left running: eval \"\$(KUBE_MCP_TEST_RUN=$KUBE_MCP_TEST_RUN $CP env)\""
  else
    "$CP" stop || true
  fi
}
