# tests/lib/previous-operator.sh: the operator of an earlier commit, built once and cached; sourced.
# Needs ROOT and a `log` function.
#
# PREVIOUS_RELEASE           the previous release's commit: be5ff7e, the last whose chart
#                            templated the CRD (tests/e2e/upgrade/kube-mcp-0.1.0.tgz is its chart)
# previous_operator COMMIT   sets PREVIOUS_OPERATOR_BIN to mcp-operator built from COMMIT's tree
#                            (`git archive`, so the clone needs that commit: not a shallow one).
#                            Cached in $KUBE_MCP_TEST_CACHE/operator-<commit>/ by the full commit
#                            hash; the build's own target directory is removed afterwards. Never
#                            this checkout's target/: cargo would mix two trees' artifacts. A lock
#                            makes a second caller (CI's early start, .ci/run) wait for the first.

PREVIOUS_RELEASE=be5ff7e3fc3099e83385b977b0f3b39ce5cc3d17

previous_operator() {
  local commit cache dir
  commit=$(git -C "$ROOT" rev-parse --verify "$1^{commit}") || {
    echo "commit $1 is not in this clone (a shallow clone? fetch it with full history)" >&2
    return 1
  }
  cache=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
  dir=$cache/operator-$commit
  PREVIOUS_OPERATOR_BIN=$dir/mcp-operator
  mkdir -p "$cache"
  (
    flock 8
    [[ -x $PREVIOUS_OPERATOR_BIN ]] && exit 0
    log "building mcp-operator of ${commit:0:12} (once; cached in $dir)"
    rm -rf "$dir.src" "$dir.target"
    mkdir -p "$dir.src"
    git -C "$ROOT" archive "$commit" | tar -x -C "$dir.src"
    (cd "$dir.src" && CARGO_TARGET_DIR=$dir.target nice cargo build --quiet --locked -p mcp-operator)
    mkdir -p "$dir"
    cp "$dir.target/debug/mcp-operator" "$PREVIOUS_OPERATOR_BIN.tmp"
    mv "$PREVIOUS_OPERATOR_BIN.tmp" "$PREVIOUS_OPERATOR_BIN"
    rm -rf "$dir.src" "$dir.target"
  ) 8>"$dir.lock"
}
