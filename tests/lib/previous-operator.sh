# tests/lib/previous-operator.sh: the operator of an earlier commit, built once and cached; sourced.
# Needs ROOT and a `log` function.
#
# previous_operator COMMIT   sets PREVIOUS_OPERATOR_BIN to mcp-operator built from COMMIT's tree
#                            (`git archive`, so the clone needs that commit: not a shallow one).
#                            Cached in $KUBE_MCP_TEST_CACHE/operator-<commit>/ by the full commit
#                            hash; the build's own target directory is removed afterwards. Never
#                            this checkout's target/: cargo would mix two trees' artifacts.

previous_operator() {
  local commit cache dir src
  commit=$(git -C "$ROOT" rev-parse --verify "$1^{commit}") || {
    echo "commit $1 is not in this clone (a shallow clone? fetch it with full history)" >&2
    return 1
  }
  cache=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
  dir=$cache/operator-$commit
  PREVIOUS_OPERATOR_BIN=$dir/mcp-operator
  [[ -x $PREVIOUS_OPERATOR_BIN ]] && return 0
  log "building mcp-operator of ${commit:0:12} (once; cached in $dir)"
  src=$dir.src
  rm -rf "$src" "$dir.target"
  mkdir -p "$src"
  git -C "$ROOT" archive "$commit" | tar -x -C "$src"
  (cd "$src" && CARGO_TARGET_DIR=$dir.target nice cargo build --quiet --locked -p mcp-operator)
  mkdir -p "$dir"
  cp "$dir.target/debug/mcp-operator" "$PREVIOUS_OPERATOR_BIN.tmp"
  mv "$PREVIOUS_OPERATOR_BIN.tmp" "$PREVIOUS_OPERATOR_BIN"
  rm -rf "$src" "$dir.target"
}
