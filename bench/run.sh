#!/usr/bin/env bash
# Benchmarks kube-mcp side by side with the official MCP SDKs (TypeScript, Python, rmcp) and with
# its floors on this machine, in one run, checks the goals of issue 31 and writes
# bench/results/<date>.md (plus the raw records as .jsonl).
#
# Builds release binaries (and the profiling build for the callgrind, auth and flame-graph
# stages) and the peers, starts each server on 127.0.0.1, runs every workload with fixed
# duration and concurrency, stops each server by its PID. Loopback only; bounded in time (about
# 15 minutes of measuring with the defaults, plus the builds). See bench/README.md.
#
# Stages (BENCH_STAGES picks, BENCH_SKIP drops; both space-separated):
#   load       kube-mcp and each peer in BENCH_PEERS: stateless call/read, legacy and HTTP+SSE
#              session flows at c=BENCH_CONCURRENCY, BENCH_IDLE idle sessions per peer
#   floor      the bare-axum floor (mcp-bench-floor) through the stateless call
#   tail       p50/p99/p999 at 50% and 90% of each server's own closed-loop peak, measured in the
#              same process right before (kube-mcp, rmcp when in BENCH_PEERS, the floor), open loop
#   http       the echo tool backed by a loopback upstream, beside a bare axum reverse proxy
#   idle       kube-mcp's idle-session scale curve, BENCH_IDLE_SIZES, Streamable HTTP and HTTP+SSE
#   callgrind  instructions per stateless call, kube-mcp and the floor (bench/callgrind.sh)
#   auth       instructions with spec.auth ÷ without (bench/auth.sh)
#   ready      process start to /readyz 200 per example declaration and a 1,000-tool one; the
#              release binary's size
#   flamegraph perf + inferno SVG of the stateless call, top self costs (bench/flamegraph.sh)
#
# Knobs (environment): BENCH_STAGES (all of the above), BENCH_SKIP (none), BENCH_DURATION (10s),
# BENCH_WARMUP (2s), BENCH_CONCURRENCY (64), BENCH_CALLS (5 tool calls per legacy session),
# BENCH_IDLE (1000 idle sessions per peer), BENCH_IDLE_SIZES ("1000 10000 50000 100000"; a size
# needing more open files than the hard `ulimit -n` is recorded as not run), BENCH_HOLD (10s),
# BENCH_PORT (18100, first of the ports used), BENCH_PEERS ("rmcp typescript-sdk python-sdk"),
# BENCH_CG_DURATION (10s, callgrind and auth windows), BENCH_READY_RUNS (5), BENCH_FG_DURATION
# (10s), BENCH_OUT (bench/results/<date>.md), MCP_BENCH_THREADS (2, load generator threads),
# BENCH_PYTHON (a python with mcp==2.3.0; default: the project venv, tests/lib/python-venv.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
CONC=${BENCH_CONCURRENCY:-64}
CALLS=${BENCH_CALLS:-5}
IDLE=${BENCH_IDLE:-1000}
IDLE_SIZES=${BENCH_IDLE_SIZES:-1000 10000 50000 100000}
HOLD=${BENCH_HOLD:-10s}
PORT=${BENCH_PORT:-18100}
PEERS=${BENCH_PEERS-rmcp typescript-sdk python-sdk}
CG_DURATION=${BENCH_CG_DURATION:-10s}
READY_RUNS=${BENCH_READY_RUNS:-5}
FG_DURATION=${BENCH_FG_DURATION:-10s}
ALL_STAGES="load floor tail http idle callgrind auth ready flamegraph"
STAGES=${BENCH_STAGES:-$ALL_STAGES}
SKIP=${BENCH_SKIP:-}
DATE=$(date -u +%Y-%m-%d)
OUT=${BENCH_OUT:-bench/results/$DATE.md}
WORK=bench/results/tmp
RECORDS=$WORK/records.jsonl
BENCH=$ROOT/target/release/mcp-bench
RUNTIME=$ROOT/target/release/mcp-runtime
# The sessions cap of every kube-mcp server here: the largest idle size (the runtime has no
# upper bound on it; it only sizes limits, nothing is allocated up front).
MAX_SESSIONS=100000

log() { printf '\n==> %s\n' "$*" >&2; }
stage() { # stage NAME: whether NAME runs
  [[ " $STAGES " == *" $1 "* && " $SKIP " != *" $1 "* ]]
}
for s in $STAGES $SKIP; do
  [[ " $ALL_STAGES " == *" $s "* ]] || { echo "unknown stage $s (stages: $ALL_STAGES)" >&2; exit 1; }
done
COMMANDS=() # what ran, for the results file
note_command() { COMMANDS+=("$*"); }

# Every idle session holds one socket in the server and one in the generator (two processes):
# each needs the size plus headroom in open files.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
HARD=$(ulimit -Hn)
fits() { [ "$NOFILE" = unlimited ] || [ $(($1 + 1000)) -le "$NOFILE" ]; }
if ! fits "$IDLE"; then
  log "ulimit -n is $NOFILE: peers' idle sessions lowered to fit"
  IDLE=$((NOFILE - 1000))
fi

log "building release binaries (nice)"
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
nice cargo build --release --locked -p mcp-runtime -p mcp-bench
note_command "cargo build --release --locked -p mcp-runtime -p mcp-bench"
if stage callgrind || stage auth || stage flamegraph; then
  log "building the profiling binaries (nice)"
  nice cargo build --profile profiling --locked -p mcp-runtime -p mcp-bench
  note_command "cargo build --profile profiling --locked -p mcp-runtime -p mcp-bench"
fi
if stage load || stage tail; then
  if [[ " $PEERS " == *" rmcp "* ]]; then
    nice cargo build --release --locked --manifest-path bench/peers/rmcp-server/Cargo.toml \
      --target-dir "$ROOT/target"
  fi
fi
if stage load && [[ " $PEERS " == *" typescript-sdk "* ]] &&
  [ ! -d bench/peers/ts/node_modules/@modelcontextprotocol/sdk ]; then
  log "installing the TypeScript SDK peer (npm ci)"
  (cd bench/peers/ts && npm ci --no-audit --no-fund)
fi
PY=${BENCH_PYTHON:-}
if stage load && [[ " $PEERS " == *" python-sdk "* ]] && [ -z "$PY" ]; then
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

# start NAME PORT [MANIFEST]: starts the server NAME on PORT, sets SERVER_PID, waits until it
# answers.
start() {
  local name=$1 port=$2 manifest=${3:-bench/manifest.yaml}
  case $name in
    kube-mcp | kube-mcp-http-tool)
      # Every bench connection comes from 127.0.0.x, which the runtime counts as few clients:
      # its per-client shares (a quarter of --max-sessions by default) are raised to the whole
      # cap, so that the idle runs measure memory rather than the share's 429s.
      "$RUNTIME" serve --manifest "$manifest" \
        --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$((port + 1))" \
        --ping-interval 0s --max-sessions "$MAX_SESSIONS" \
        --max-sessions-per-client "$MAX_SESSIONS" \
        --max-listen-streams-per-client "$MAX_SESSIONS" --log-level warn &
      ;;
    rmcp) "$ROOT/target/release/rmcp-bench-server" "$port" & ;;
    typescript-sdk) node bench/peers/ts/server.mjs "$port" & ;;
    python-sdk) "$PY" bench/peers/python/server.py "$port" & ;;
    floor) "$ROOT/target/release/mcp-bench-floor" "127.0.0.1:$port" 2>/dev/null & ;;
    proxy-floor)
      "$ROOT/target/release/mcp-bench-floor" proxy "127.0.0.1:$port" \
        "http://127.0.0.1:$UPSTREAM_PORT/echo" 2>/dev/null &
      ;;
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
  log "$name: $workload ($protocol) c=$CONC $*"
  "$BENCH" load --addr "127.0.0.1:$port" --pid "$SERVER_PID" --server "$name" \
    --protocol "$protocol" --workload "$workload" --concurrency "$CONC" --calls "$CALLS" \
    --warmup "$WARMUP" --duration "$DURATION" --out "$RECORDS" "$@" > /dev/null
}

idle() { # idle NAME PORT MODE N
  local name=$1 port=$2 mode=$3 n=$4 path=/mcp protocol="Streamable HTTP 2025-11-25"
  if [ "$mode" = sse ]; then path=/sse protocol="HTTP+SSE 2024-11-05"; fi
  if ! fits "$n"; then
    log "$name: $n idle $mode sessions do not fit ulimit -n $NOFILE"
    "$BENCH" record --server "$name" --workload not-run --protocol "idle-$mode" \
      --concurrency "$n" --out "$RECORDS" \
      --note "not run: needs ulimit -n ≥ $((n + 1000)), this machine's hard limit is $HARD" >/dev/null
    return 0
  fi
  log "$name: $n idle $mode sessions"
  start "$name" "$port"
  "$BENCH" idle --addr "127.0.0.1:$port" --pid "$SERVER_PID" --server "$name" \
    --protocol "$protocol" --mode "$mode" --path "$path" --sessions "$n" --hold "$HOLD" \
    --out "$RECORDS" > /dev/null || log "$name: idle $mode run failed"
  stop
}

# peak NAME: the closed-loop req/s of NAME's stateless call in this run's records.
peak() {
  grep "\"server\":\"$1\"" "$RECORDS" | grep '"workload":"modern-call"' | grep -v '"rate":' |
    tail -n1 | sed 's/.*"rps":\([0-9.]*\).*/\1/'
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date +%s)

if stage load; then
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
    stop
    # kube-mcp's idle sessions are measured by the idle stage (its 1,000 point is the peers').
    if [ "$name" != kube-mcp ]; then
      idle "$name" $((port + 2)) streamable "$IDLE"
      if [ "$name" != rmcp ]; then idle "$name" $((port + 4)) sse "$IDLE"; fi
    fi
    port=$((port + 10))
  done
  note_command "mcp-bench load --workload {modern,sessionless}-{call,read}|legacy-flow|sse-flow --concurrency $CONC --warmup $WARMUP --duration $DURATION (per server)"
fi

# The floor (bench/src/floor.rs: bare axum, one constant answer): kube-mcp's CPU per stateless
# call is judged against it.
FLOOR_PORT=$((PORT + 50))
if stage floor; then
  start floor "$FLOOR_PORT"
  load floor "$FLOOR_PORT" modern-call "bare axum, constant answer"
  stop
fi

# Tail latency: each server's own closed-loop peak, then open loop at 50% and 90% of it.
if stage tail; then
  tail_servers="kube-mcp floor"
  if [[ " $PEERS " == *" rmcp "* ]]; then tail_servers="kube-mcp rmcp floor"; fi
  port=$((PORT + 60))
  for name in $tail_servers; do
    start "$name" "$port"
    # The peak in the same process, right before the paced runs (the report pairs each paced
    # run with the closed-loop run recorded just before it).
    load "$name" "$port" modern-call "2026-07-28, peak before the paced runs"
    p=$(peak "$name")
    for share in 50 90; do
      rate=$(awk -v p="$p" -v s="$share" 'BEGIN { printf "%.0f", p * s / 100 }')
      load "$name" "$port" modern-call "2026-07-28, $share% of peak" --rate "$rate"
    done
    stop
  done
  note_command "mcp-bench load --workload modern-call --concurrency $CONC --rate <50% and 90% of the server's peak>"
fi

# An HTTP-backed tool: kube-mcp serving bench/manifest-http.yaml against a loopback upstream,
# beside a bare axum reverse proxy making the same upstream call. The upstream's CPU is counted
# for neither.
if stage http; then
  UPSTREAM_PORT=$((PORT + 70))
  "$ROOT/target/release/mcp-bench-floor" upstream "127.0.0.1:$UPSTREAM_PORT" 2>/dev/null &
  UPSTREAM_PID=$!
  PIDS+=("$UPSTREAM_PID")
  for _ in $(seq 1 50); do
    curl -fs -o /dev/null --max-time 1 "http://127.0.0.1:$UPSTREAM_PORT/" && break
    sleep 0.1
  done
  sed "s/UPSTREAM_PORT/$UPSTREAM_PORT/" bench/manifest-http.yaml > "$WORK/manifest-http.yaml"
  port=$((PORT + 72))
  for name in kube-mcp-http-tool proxy-floor; do
    start "$name" "$port" "$WORK/manifest-http.yaml"
    load "$name" "$port" modern-call "2026-07-28, echo via a loopback upstream"
    stop
  done
  kill "$UPSTREAM_PID" 2>/dev/null || true
  wait "$UPSTREAM_PID" 2>/dev/null || true
  note_command "mcp-bench-floor upstream; mcp-runtime serve --manifest bench/manifest-http.yaml (port substituted); mcp-bench-floor proxy; mcp-bench load --workload modern-call"
fi

# kube-mcp's idle-session scale curve: one fresh process per point.
if stage idle; then
  port=$((PORT + 80))
  for n in $IDLE_SIZES; do
    idle kube-mcp "$port" streamable "$n"
    idle kube-mcp $((port + 2)) sse "$n"
  done
  note_command "mcp-bench idle --mode {streamable,sse} --sessions {$IDLE_SIZES} --hold $HOLD (fresh kube-mcp per point)"
fi

# Instructions per call under callgrind, kube-mcp and the floor; then with spec.auth.
if stage callgrind; then
  if command -v valgrind >/dev/null; then
    for server in kube-mcp floor; do
      log "callgrind: $server ($CG_DURATION)"
      CG_SERVER=$server CG_DURATION=$CG_DURATION CG_PORT=$((PORT + 90)) CG_RECORD=$RECORDS \
        CG_ANNOTATE=$WORK/callgrind-$server.txt bench/callgrind.sh >&2 ||
        log "callgrind of $server failed"
    done
    note_command "CG_SERVER={kube-mcp,floor} CG_DURATION=$CG_DURATION bench/callgrind.sh"
  else
    log "no valgrind: callgrind stage skipped"
  fi
fi
if stage auth; then
  log "auth: callgrind with and without spec.auth ($CG_DURATION)"
  AB_DURATION=$CG_DURATION AB_RECORD=$RECORDS AB_REPORT=$WORK/auth.md bench/auth.sh >&2 ||
    log "bench/auth.sh failed"
  note_command "AB_DURATION=$CG_DURATION bench/auth.sh"
fi

# Start to ready of every example declaration that serves without a cluster, and of a
# 1,000-tool declaration; the release binary's size.
if stage ready; then
  mkdir -p "$WORK/secrets/issue-tracker-api"
  printf 'bench-dummy-token' > "$WORK/secrets/issue-tracker-api/token"
  "$BENCH" declaration 1000 > "$WORK/declaration-1000.yaml"
  admin=$((PORT + 95))
  for manifest in examples/*.yaml examples/issue-tracker/issue-tracker.yaml "$WORK/declaration-1000.yaml"; do
    label=${manifest#"$WORK/"}
    [[ $label == declaration-1000.yaml ]] && label="1,000-tool declaration (mcp-bench declaration 1000)"
    log "start to ready: $label"
    if ! "$BENCH" ready --admin "127.0.0.1:$admin" --label "$label" --runs "$READY_RUNS" \
      --out "$RECORDS" -- "$RUNTIME" serve --manifest "$manifest" \
      --listen "127.0.0.1:$((admin - 1))" --admin-listen "127.0.0.1:$admin" \
      --secrets-dir "$WORK/secrets" --log-level warn > /dev/null 2> "$WORK/ready.err"; then
      "$BENCH" record --server "$label" --workload start-to-ready --out "$RECORDS" \
        --note "skipped: $(tail -n1 "$WORK/ready.err" | tr '|' '/')" > /dev/null
    fi
  done
  "$BENCH" record --server target/release/mcp-runtime --workload binary-size \
    --bytes "$(stat -c %s "$RUNTIME")" --note "release profile, $(git rev-parse --short HEAD)" \
    --out "$RECORDS" > /dev/null
  note_command "mcp-bench ready --runs $READY_RUNS -- mcp-runtime serve --manifest <each> --secrets-dir <dummy secrets>"
fi

if stage flamegraph; then
  log "flame graph ($FG_DURATION)"
  FG_DURATION=$FG_DURATION FG_PORT=$((PORT + 97)) FG_SVG="${OUT%.md}-flamegraph.svg" \
    FG_TOP_OUT=$WORK/flamegraph-top.md bench/flamegraph.sh >&2 || log "bench/flamegraph.sh failed"
  note_command "FG_DURATION=$FG_DURATION bench/flamegraph.sh"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - STARTED ))

versions=""
if [[ " $PEERS " == *" rmcp "* ]]; then versions="rmcp 3.11.0 (axum)"; fi
if [[ " $PEERS " == *" typescript-sdk "* ]] && [ -d bench/peers/ts/node_modules/@modelcontextprotocol/sdk ]; then
  versions="\`@modelcontextprotocol/sdk\` $(node -p "require('./bench/peers/ts/node_modules/@modelcontextprotocol/sdk/package.json').version") (node:http), $versions"
fi
if [ -n "$PY" ]; then
  versions="\`mcp\` $("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))') (uvicorn, 1 process), $versions"
fi
versions=${versions%, }
{
  cat <<EOF
Run $(date -u '+%Y-%m-%d %H:%M UTC') on commit \`$(git rev-parse --short HEAD)\`$(git diff --quiet HEAD -- runtime bench || echo ' (with local changes)'), stages: $(for s in $STAGES; do [[ " $SKIP " == *" $s "* ]] || printf '%s ' "$s"; done)(${ELAPSED} s of measuring).

| machine | |
|---|---|
| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores |
| memory | $(free -g | awk '/^Mem:/ {print $2}') GiB |
| kernel | $(uname -r) |
| load average (1, 5, 15 min) | before $LOAD_BEFORE, after $LOAD_AFTER |
| open files limit | $NOFILE (hard $HARD) |
| toolchains | $(rustc --version | cut -d' ' -f1-2)$(command -v node >/dev/null && echo ", node $(node --version)")$([ -n "$PY" ] && echo ", $("$PY" --version)"), $(valgrind --version 2>/dev/null || echo 'no valgrind'), $(perf --version 2>/dev/null || echo 'no perf') |
| peers | ${versions:-none} |

Each load workload: $CONC keep-alive connections, one request in flight on each, $WARMUP warm-up then
$DURATION measured; the load generator (\`mcp-bench\`, ${MCP_BENCH_THREADS:-2} threads) runs on the same
cores as the server. Latency is per HTTP request. "server CPU µs/req" is the server's user+system CPU
time over the window (\`/proc/<pid>/stat\`) divided by successful requests: it does not depend on how
much CPU the generator took, so it is the steadiest figure on a shared machine. Idle runs open the
sessions 64 at a time on fresh server processes, hold them $HOLD, and read the server's RSS.
Callgrind windows: $CG_DURATION at c=4 after a 2 s warm-up, profiling build.

Commands:

EOF
  for c in "${COMMANDS[@]}"; do printf -- '- `%s`\n' "$c"; done
} > "$WORK/machine.md"

mkdir -p "$(dirname "$OUT")"
notes=()
if [ -f "${OUT%.md}.notes.md" ]; then notes=(--notes "${OUT%.md}.notes.md"); fi
"$BENCH" report "$RECORDS" --machine "$WORK/machine.md" "${notes[@]}" > "$OUT"
if [ -s "$WORK/flamegraph-top.md" ]; then
  { echo "## Where time goes (bench/flamegraph.sh)"; echo; cat "$WORK/flamegraph-top.md"; echo; } >> "$OUT"
fi
if [ -s "$WORK/callgrind-kube-mcp.txt" ]; then
  { echo "## Top inclusive costs under callgrind (kube-mcp)"; echo; echo '```'
    cat "$WORK/callgrind-kube-mcp.txt"; echo '```'; echo; } >> "$OUT"
fi
cp "$RECORDS" "${OUT%.md}.jsonl"
awk '/^## Goals \(issue 31\)/ { on = 1 } on && /^## / && !/Goals/ { exit } on' "$OUT"
log "wrote $OUT and ${OUT%.md}.jsonl (${ELAPSED} s of measuring)"
