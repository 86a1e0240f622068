# tests/lib/runtime.sh: start and stop an mcp-runtime process for script-driven tests (sourced).
#
# runtime_start MANIFEST [extra serve flags...]  sets RUNTIME_PID, RUNTIME_PORT, RUNTIME_ADMIN_PORT
# runtime_stop                                   SIGTERM by pid, then SIGKILL after 10 s
# Listens on 127.0.0.1 only; logs go to $RUNTIME_LOG (default a temp file).

RUNTIME_BIN=${MCP_RUNTIME_BIN:-target/debug/mcp-runtime}

# A port nobody listens on, asked from the kernel by binding port 0.
runtime_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

runtime_start() {
  local manifest=$1
  shift
  RUNTIME_PORT=$(runtime_free_port)
  RUNTIME_ADMIN_PORT=$(runtime_free_port)
  RUNTIME_LOG=${RUNTIME_LOG:-$(mktemp -t mcp-runtime.XXXXXX.log)}
  "$RUNTIME_BIN" serve --manifest "$manifest" --listen "127.0.0.1:$RUNTIME_PORT" \
    --admin-listen "127.0.0.1:$RUNTIME_ADMIN_PORT" "$@" >"$RUNTIME_LOG" 2>&1 &
  RUNTIME_PID=$!
  for _ in $(seq 100); do
    if curl -fsS "http://127.0.0.1:$RUNTIME_ADMIN_PORT/readyz" >/dev/null 2>&1; then
      return 0
    fi
    if ! kill -0 "$RUNTIME_PID" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  echo "mcp-runtime did not become ready; its log:" >&2
  tail -n 30 "$RUNTIME_LOG" >&2
  runtime_stop
  return 1
}

runtime_stop() {
  [[ -n ${RUNTIME_PID:-} ]] || return 0
  kill -TERM "$RUNTIME_PID" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$RUNTIME_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$RUNTIME_PID" 2>/dev/null || true
  wait "$RUNTIME_PID" 2>/dev/null || true
  RUNTIME_PID=
}
