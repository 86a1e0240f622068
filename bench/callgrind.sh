#!/usr/bin/env bash
# bench/callgrind.sh: instructions per stateless `tools/call`, counted by callgrind (steady on a
# busy machine, unlike wall-clock figures). Starts mcp-runtime (profiling build) under callgrind
# on 127.0.0.1 with instrumentation off, warms it up, turns instrumentation on for a fixed
# window of `mcp-bench load --workload modern-call`, dumps, and divides the instructions by the
# requests served. Stops the server by its PID. Prints one line: `instructions/request N`.
#
# Knobs: CG_PORT (18170), CG_DURATION (10s), CG_CONCURRENCY (4), CG_RUNTIME and CG_BENCH (the
# binaries; default target/profiling/…, built with `cargo build --profile profiling -p
# mcp-runtime -p mcp-bench`), CG_OUT (a directory for the dump; default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${CG_PORT:-18170}
DURATION=${CG_DURATION:-10s}
CONCURRENCY=${CG_CONCURRENCY:-4}
RUNTIME=${CG_RUNTIME:-target/profiling/mcp-runtime}
BENCH=${CG_BENCH:-target/profiling/mcp-bench}
OUT=${CG_OUT:-$(mktemp -d -t kube-mcp-callgrind.XXXXXX)}
for tool in valgrind callgrind_control; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install valgrind)" >&2; exit 1; }
done

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.out.%p" \
  "$RUNTIME" serve --manifest bench/manifest.yaml --listen "127.0.0.1:$PORT" \
  --admin-listen "127.0.0.1:$((PORT + 1))" --ping-interval 0s >"$OUT/server.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  curl -fsS "http://127.0.0.1:$((PORT + 1))/readyz" >/dev/null 2>&1 && break
  kill -0 "$PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.2
done

load() {
  "$BENCH" load --addr "127.0.0.1:$PORT" --server kube-mcp --workload modern-call \
    --concurrency "$CONCURRENCY" --warmup 0s --duration "$1" --out "$OUT/$2.jsonl"
}
load 2s warmup >/dev/null
callgrind_control --instr=on "$PID" >/dev/null
load "$DURATION" measured >"$OUT/measured.txt"
callgrind_control --dump=measured "$PID" >/dev/null
callgrind_control --instr=off "$PID" >/dev/null

requests=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(r["requests"] if r.get("errors", 0) == 0 else -1)' "$OUT/measured.jsonl")
dump=$(ls -t "$OUT"/cg.out.* | head -1)
instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
if ((requests <= 0)); then
  echo "the measured window had errors or no requests: see $OUT" >&2
  exit 1
fi
echo "requests $requests instructions $instructions"
echo "instructions/request $((instructions / requests))"
