#!/usr/bin/env bash
# Benchmarks kube-mcp side by side with the official MCP SDKs (TypeScript, Python, rmcp) on this
# machine, in one run, and writes bench/results/<date>.md (plus the raw records as .jsonl).
#
# Builds release binaries and the peers, starts each server on 127.0.0.1, runs every workload with
# fixed duration and concurrency, stops each server by its PID. Loopback only; bounded in time
# (about 10 minutes with the defaults). See bench/README.md.
#
# Knobs (environment): BENCH_DURATION (10s), BENCH_WARMUP (2s), BENCH_CONCURRENCY (64),
# BENCH_CALLS (5 tool calls per legacy session), BENCH_IDLE (1000 idle sessions per peer),
# BENCH_IDLE_BIG (10000 idle HTTP+SSE sessions on kube-mcp), BENCH_HOLD (10s),
# BENCH_PORT (18100, first of the ports used), BENCH_PEERS ("rmcp typescript-sdk python-sdk"),
# BENCH_OUT (bench/results/<date>.md), MCP_BENCH_THREADS (2, load generator threads),
# BENCH_PYTHON (a python with mcp==2.3.0; default: the project venv, tests/lib/python-venv.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
CONC=${BENCH_CONCURRENCY:-64}
CALLS=${BENCH_CALLS:-5}
IDLE=${BENCH_IDLE:-1000}
IDLE_BIG=${BENCH_IDLE_BIG:-10000}
HOLD=${BENCH_HOLD:-10s}
PORT=${BENCH_PORT:-18100}
PEERS=${BENCH_PEERS:-rmcp typescript-sdk python-sdk}
DATE=$(date -u +%Y-%m-%d)
OUT=${BENCH_OUT:-bench/results/$DATE.md}
WORK=bench/results/tmp
RECORDS=$WORK/records.jsonl
BENCH=$ROOT/target/release/mcp-bench

log() { printf '\n==> %s\n' "$*" >&2; }

# Every idle session holds a socket on each side.
want=$((IDLE_BIG + IDLE + 1024))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
  ulimit -n "$(ulimit -Hn)" || true
fi
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
  log "ulimit -n is $(ulimit -n) (< $want): idle session counts lowered to fit"
  IDLE_BIG=$(( $(ulimit -n) - IDLE - 1024 ))
fi

log "building release binaries (nice)"
nice cargo build --release --locked -p mcp-runtime -p mcp-bench
nice cargo build --release --locked --manifest-path bench/peers/rmcp-server/Cargo.toml \
  --target-dir "$ROOT/target"
if [ ! -d bench/peers/ts/node_modules/@modelcontextprotocol/sdk ]; then
  log "installing the TypeScript SDK peer (npm ci)"
  (cd bench/peers/ts && npm ci --no-audit --no-fund)
fi
PY=${BENCH_PYTHON:-}
if [ -z "$PY" ]; then
  # The project's one Python venv (its pins include mcp==2.3.0 and uvicorn).
  source "$ROOT/tests/lib/python-venv.sh"
  log "preparing the Python venv"
  python_venv
  PY=$PYTHON
fi

rm -rf "$WORK" && mkdir -p "$WORK"
: > "$RECORDS"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# start NAME PORT: starts the server NAME on PORT, sets SERVER_PID, waits until it answers.
start() {
  local name=$1 port=$2
  case $name in
    kube-mcp)
      # Every bench connection comes from 127.0.0.1, which the runtime counts as one client:
      # its per-client shares (a quarter of --max-sessions by default) are raised to the whole
      # cap, so that the idle runs measure memory rather than the share's 429s.
      "$ROOT/target/release/mcp-runtime" serve --manifest bench/manifest.yaml \
        --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
        --ping-interval 0s --max-sessions 50000 --max-sessions-per-client 50000 \
        --max-listen-streams-per-client 50000 --log-level warn &
      ;;
    rmcp) "$ROOT/target/release/rmcp-bench-server" "$port" & ;;
    typescript-sdk) node bench/peers/ts/server.mjs "$port" & ;;
    python-sdk) "$PY" bench/peers/python/server.py "$port" & ;;
    floor) "$ROOT/target/release/mcp-bench-floor" "127.0.0.1:$port" 2>/dev/null & ;;
  esac
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 100); do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/mcp"; then return 0; fi
    sleep 0.2
  done
  echo "$name did not start on port $port" >&2
  return 1
}

stop() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}

# Which protocol each server speaks for the stateless workloads (the TypeScript SDK 1.32 knows
# versions up to 2025-11-25 only: its stateless mode serves session-less 2025-11-25 POSTs).
stateless_of() { [ "$1" = typescript-sdk ] && echo sessionless || echo modern; }
stateless_label() {
  [ "$1" = typescript-sdk ] && echo "2025-11-25 stateless mode" || echo "2026-07-28"
}

load() { # load NAME PORT WORKLOAD PROTOCOL [extra args]
  local name=$1 port=$2 workload=$3 protocol=$4
  shift 4
  log "$name: $workload ($protocol) c=$CONC"
  "$BENCH" load --addr "127.0.0.1:$port" --pid "$SERVER_PID" --server "$name" \
    --protocol "$protocol" --workload "$workload" --concurrency "$CONC" --calls "$CALLS" \
    --warmup "$WARMUP" --duration "$DURATION" --out "$RECORDS" "$@" > /dev/null
}

idle() { # idle NAME PORT MODE N
  local name=$1 port=$2 mode=$3 n=$4 path=/mcp protocol="Streamable HTTP 2025-11-25"
  if [ "$mode" = sse ]; then path=/sse protocol="HTTP+SSE 2024-11-05"; fi
  log "$name: $n idle $mode sessions"
  start "$name" "$port"
  "$BENCH" idle --addr "127.0.0.1:$port" --pid "$SERVER_PID" --server "$name" \
    --protocol "$protocol" --mode "$mode" --path "$path" --sessions "$n" --hold "$HOLD" \
    --out "$RECORDS" > /dev/null || log "$name: idle $mode run failed"
  stop
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
port=$PORT
for name in kube-mcp $PEERS; do
  kind=$(stateless_of "$name")
  label=$(stateless_label "$name")
  start "$name" "$port"
  load "$name" "$port" "$kind-call" "$label"
  load "$name" "$port" "$kind-read" "$label"
  load "$name" "$port" legacy-flow "Streamable HTTP 2025-11-25, $CALLS calls/session"
  # rmcp has no HTTP+SSE server transport.
  if [ "$name" != rmcp ]; then
    load "$name" "$port" sse-flow "HTTP+SSE 2024-11-05, $CALLS calls/session" --path /sse
  fi
  if [ "$name" = kube-mcp ]; then
    peak=$(grep '"workload":"modern-call"' "$RECORDS" | sed 's/.*"rps":\([0-9.]*\).*/\1/')
    half=$(awk -v p="$peak" 'BEGIN { printf "%.0f", p / 2 }')
    load "$name" "$port" modern-call "2026-07-28, half of peak" --rate "$half"
  fi
  stop
  idle "$name" $((port + 2)) streamable "$IDLE"
  if [ "$name" != rmcp ]; then idle "$name" $((port + 4)) sse "$IDLE"; fi
  if [ "$name" = kube-mcp ]; then idle "$name" $((port + 6)) sse "$IDLE_BIG"; fi
  port=$((port + 10))
done

# The floor (bench/src/floor.rs: bare axum, one constant answer): kube-mcp's CPU per stateless
# call is judged against it (issue 15's goal, in the report's goals).
start floor "$port"
load floor "$port" modern-call "bare axum, constant answer"
stop
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

ts_version=$(node -p "require('./bench/peers/ts/node_modules/@modelcontextprotocol/sdk/package.json').version")
py_version=$("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')
cat > "$WORK/machine.md" <<EOF
Run $(date -u '+%Y-%m-%d %H:%M UTC') on commit \`$(git rev-parse --short HEAD)\`$(git diff --quiet HEAD -- runtime bench || echo ' (with local changes)').

| machine | |
|---|---|
| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores |
| memory | $(free -g | awk '/^Mem:/ {print $2}') GiB |
| kernel | $(uname -r) |
| load average (1, 5, 15 min) | before $LOAD_BEFORE, after $LOAD_AFTER |
| open files limit | $(ulimit -n) |
| toolchains | $(rustc --version | cut -d' ' -f1-2), node $(node --version), $("$PY" --version) |
| peers | \`@modelcontextprotocol/sdk\` $ts_version (node:http), \`mcp\` $py_version (uvicorn, 1 process), rmcp 3.11.0 (axum) |

Each load workload: $CONC keep-alive connections, one request in flight on each, $WARMUP warm-up then
$DURATION measured; the load generator (\`mcp-bench\`, ${MCP_BENCH_THREADS:-2} threads) runs on the same
cores as the server. Latency is per HTTP request. "server CPU µs/req" is the server's user+system CPU
time over the window (\`/proc/<pid>/stat\`) divided by successful requests: it does not depend on how
much CPU the generator took, so it is the steadiest figure on a shared machine. Idle runs open the
sessions 64 at a time on fresh server processes, hold them $HOLD, and read the server's RSS.
EOF

mkdir -p "$(dirname "$OUT")"
notes=()
if [ -f "${OUT%.md}.notes.md" ]; then notes=(--notes "${OUT%.md}.notes.md"); fi
"$BENCH" report "$RECORDS" --machine "$WORK/machine.md" "${notes[@]}" > "$OUT"
cp "$RECORDS" "${OUT%.md}.jsonl"
log "wrote $OUT"
