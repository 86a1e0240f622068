# tests/lib/previous-operator.sh: the operator of an earlier commit, built once and cached; sourced.
# Needs ROOT and a `log` function.
#
# PREVIOUS_RELEASE           the previous release's commit: be5ff7e, the last whose chart
#                            templated the CRD (tests/e2e/upgrade/kube-mcp-0.1.0.tgz is its chart)
# previous_operator COMMIT   sets PREVIOUS_OPERATOR_BIN to mcp-operator built from COMMIT's tree
#                            (`git archive`). A shallow clone lacking COMMIT fetches its history
#                            first. Cached in $KUBE_MCP_TEST_CACHE/operator-<commit>/ by the full
#                            commit hash; the build's own target directory is removed afterwards.
#                            Never this checkout's target/: cargo would mix two trees' artifacts.
#                            A lock makes a second caller (CI's early start, .ci/run) wait.

PREVIOUS_RELEASE=be5ff7e3fc3099e83385b977b0f3b39ce5cc3d17

previous_operator() {
  local cache commit
  cache=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
  mkdir -p "$cache"
  (
    flock 8
    if ! git -C "$ROOT" rev-parse --verify -q "$1^{commit}" >/dev/null &&
      [[ $(git -C "$ROOT" rev-parse --is-shallow-repository) == true ]]; then
      log "fetching the history of this shallow clone, for ${1:0:12}"
      git -C "$ROOT" fetch --quiet --unshallow || true
    fi
    commit=$(git -C "$ROOT" rev-parse --verify -q "$1^{commit}") || {
      echo "commit $1 is not in this clone, nor could its history be fetched" >&2
      exit 1
    }
    local dir=$cache/operator-$commit
    [[ -x $dir/mcp-operator ]] && exit 0
    log "building mcp-operator of ${commit:0:12} (once; cached in $dir)"
    rm -rf "$dir.src" "$dir.target"
    mkdir -p "$dir.src"
    git -C "$ROOT" archive "$commit" | tar -x -C "$dir.src"
    (cd "$dir.src" && CARGO_TARGET_DIR=$dir.target nice cargo build --quiet --locked -p mcp-operator)
    mkdir -p "$dir"
    cp "$dir.target/debug/mcp-operator" "$dir/mcp-operator.tmp"
    mv "$dir/mcp-operator.tmp" "$dir/mcp-operator"
    rm -rf "$dir.src" "$dir.target"
  ) 8>"$cache/previous-operator.lock" || return 1
  commit=$(git -C "$ROOT" rev-parse --verify "$1^{commit}")
  PREVIOUS_OPERATOR_BIN=$cache/operator-$commit/mcp-operator
}
