#!/usr/bin/env bash
# bench/floor.sh: kube-mcp's server CPU per stateless `tools/call` as a ratio to the floor's
# (`mcp-bench-floor`: bare axum, one constant JSON-RPC answer to every POST), measured by the
# same generator and workload (`mcp-bench load --workload modern-call`). The two servers run in
# turn, FLOOR_ROUNDS times each, so load from other work on the machine hits both alike.
# Starts both on 127.0.0.1, stops each by its PID; bounded in time (rounds x 2 x (warm-up +
# duration)). Prints one line per run (server, CPU µs/req, req/s, load average) and the median
# ratio. Needs the release binaries: `cargo build --release -p mcp-runtime -p mcp-bench`.
#
# Knobs: FLOOR_ROUNDS (5), FLOOR_DURATION (10s), FLOOR_CONCURRENCY (64), FLOOR_PORT (18180),
# FLOOR_OUT (a JSON-lines file to append the records to; default a temp file), FLOOR_RUNTIME
# (the mcp-runtime binary; default target/release/mcp-runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${FLOOR_ROUNDS:-5}
DURATION=${FLOOR_DURATION:-10s}
CONC=${FLOOR_CONCURRENCY:-64}
PORT=${FLOOR_PORT:-18180}
OUT=${FLOOR_OUT:-$(mktemp -t kube-mcp-floor.XXXXXX.jsonl)}
BIN=target/release
RUNTIME=${FLOOR_RUNTIME:-$BIN/mcp-runtime}

SERVER_PID=
trap '[ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true' EXIT

start() { # start NAME
  case $1 in
    kube-mcp)
      "$RUNTIME" serve --manifest bench/manifest.yaml --listen "127.0.0.1:$PORT" \
        --admin-listen "127.0.0.1:$((PORT + 1))" --ping-interval 0s --log-level warn &
      ;;
    floor) "$BIN/mcp-bench-floor" "127.0.0.1:$PORT" 2>/dev/null & ;;
  esac
  SERVER_PID=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/mcp" && return 0
    sleep 0.1
  done
  echo "$1 did not start" >&2
  exit 1
}

stop() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}

for round in $(seq "$ROUNDS"); do
  for name in kube-mcp floor; do
    start "$name"
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$BIN/mcp-bench" load --addr "127.0.0.1:$PORT" --pid "$SERVER_PID" --server "$name" \
      --protocol "round $round, load $load" --workload modern-call --concurrency "$CONC" \
      --duration "$DURATION" --out "$OUT" >/dev/null
    stop
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
records = records[-2 * int(sys.argv[2]):]
ratios = []
for kube, floor in zip(records[0::2], records[1::2]):
    for r in (kube, floor):
        print(f"{r['server']:9} {r['protocol']:24} {r['cpu_us_per_req']:6.1f} us/req "
              f"{r['rps']:8.0f} req/s  errors {r['errors']}")
    ratios.append(kube["cpu_us_per_req"] / floor["cpu_us_per_req"])
print("ratio kube-mcp/floor per round:", " ".join(f"{x:.2f}" for x in ratios))
print(f"median ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
PY
