#!/usr/bin/env bash
# bench/callgrind.sh: instructions per stateless `tools/call`, counted by callgrind (steady on a
# busy machine, unlike wall-clock figures). Starts mcp-runtime (profiling build) under callgrind
# on 127.0.0.1 with instrumentation off, warms it up, turns instrumentation on for a fixed
# window of `mcp-bench load --workload modern-call`, dumps, and divides the instructions by the
# requests served. Stops the server by its PID. Prints one line: `instructions/request N`.
# `CG_SERVER=floor` measures the floor (`mcp-bench-floor`: bare axum, one constant answer) the
# same way, for the ratio kube-mcp/floor.
#
# Knobs: CG_SERVER (kube-mcp, or floor), CG_PORT (18170), CG_DURATION (10s), CG_CONCURRENCY (4),
# CG_RUNTIME, CG_FLOOR and CG_BENCH (the binaries; default target/profiling/…, built with
# `cargo build --profile profiling -p mcp-runtime -p mcp-bench`), CG_OUT (a directory for the
# dump; default a temp dir), CG_ARGS (more `serve` flags), CG_TRACING=1 (tracing on, exporting
# to bench/otlp-sink.py on 127.0.0.1:CG_PORT+2; what reached it is printed too). CG_ARGS and
# CG_TRACING are kube-mcp's only. CG_RECORD (a JSON-lines records file: the result is appended
# to it as one `callgrind-call` record, through `mcp-bench record`, for bench/run.sh's report),
# CG_ANNOTATE (a file: callgrind_annotate's top 25 functions by inclusive cost go there).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${CG_SERVER:-kube-mcp}
PORT=${CG_PORT:-18170}
DURATION=${CG_DURATION:-10s}
CONCURRENCY=${CG_CONCURRENCY:-4}
RUNTIME=${CG_RUNTIME:-target/profiling/mcp-runtime}
FLOOR=${CG_FLOOR:-target/profiling/mcp-bench-floor}
BENCH=${CG_BENCH:-target/profiling/mcp-bench}
OUT=${CG_OUT:-$(mktemp -d -t kube-mcp-callgrind.XXXXXX)}
mkdir -p "$OUT"
for tool in valgrind callgrind_control; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install valgrind)" >&2; exit 1; }
done

case $SERVER in
  kube-mcp) ;;
  floor)
    if [[ -n ${CG_ARGS:-} || ${CG_TRACING:-0} == 1 ]]; then
      echo "CG_ARGS and CG_TRACING are for CG_SERVER=kube-mcp" >&2
      exit 1
    fi
    ;;
  *) echo "CG_SERVER is kube-mcp or floor, not $SERVER" >&2; exit 1 ;;
esac

read -ra EXTRA <<<"${CG_ARGS:-}"
SINK=
if [[ ${CG_TRACING:-0} == 1 ]]; then
  python3 bench/otlp-sink.py "$((PORT + 2))" >"$OUT/sink.out" 2>&1 &
  SINK=$!
  for _ in $(seq 50); do [[ -s $OUT/sink.out ]] && break; sleep 0.1; done
  EXTRA+=(--otlp-endpoint "http://127.0.0.1:$(head -n1 "$OUT/sink.out")")
fi
if [[ $SERVER == floor ]]; then
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.out.%p" \
    "$FLOOR" "127.0.0.1:$PORT" >"$OUT/server.log" 2>&1 &
  # The floor has no admin port: it is up when its one port answers (405 to a GET).
  READY=(curl -s -o /dev/null "http://127.0.0.1:$PORT/mcp")
else
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.out.%p" \
    "$RUNTIME" serve --manifest bench/manifest.yaml --listen "127.0.0.1:$PORT" \
    --admin-listen "127.0.0.1:$((PORT + 1))" --ping-interval 0s "${EXTRA[@]}" >"$OUT/server.log" 2>&1 &
  READY=(curl -fsS "http://127.0.0.1:$((PORT + 1))/readyz")
fi
PID=$!
stop() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  if [[ -n $SINK ]]; then
    kill "$SINK" 2>/dev/null || true
    wait "$SINK" 2>/dev/null || true
  fi
}
trap stop EXIT
for _ in $(seq 300); do
  "${READY[@]}" --max-time 1 >/dev/null 2>&1 && break
  kill -0 "$PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.2
done

load() {
  "$BENCH" load --addr "127.0.0.1:$PORT" --server "$SERVER" --workload modern-call \
    --concurrency "$CONCURRENCY" --warmup 0s --duration "$1" --out "$OUT/$2.jsonl"
}
load 2s warmup >/dev/null
callgrind_control --instr=on "$PID" >/dev/null
load "$DURATION" measured >"$OUT/measured.txt"
callgrind_control --dump=measured "$PID" >/dev/null
callgrind_control --instr=off "$PID" >/dev/null

requests=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(r["requests"] if r.get("errors", 0) == 0 else -1)' "$OUT/measured.jsonl")
# The dump this script asked for, by its reason (the server also writes one when it exits).
dump=$(grep -l '^desc: Trigger: dump measured$' "$OUT"/cg.out.* | head -1 || true)
[[ -n $dump ]] || { echo "no measured dump in $OUT" >&2; exit 1; }
instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
if ((requests <= 0)); then
  echo "the measured window had errors or no requests: see $OUT" >&2
  exit 1
fi
echo "requests $requests instructions $instructions"
echo "instructions/request $((instructions / requests))"
if [[ -n ${CG_RECORD:-} ]]; then
  "$BENCH" record --server "$SERVER" --workload callgrind-call --concurrency "$CONCURRENCY" \
    --protocol "bench/callgrind.sh, c=$CONCURRENCY, $DURATION" --requests "$requests" \
    --instructions "$((instructions / requests))" --note "$instructions instructions" \
    --out "$CG_RECORD" >/dev/null
fi
if [[ -n ${CG_ANNOTATE:-} ]]; then
  callgrind_annotate --inclusive=yes --threshold=100 "$dump" 2>/dev/null | head -n 45 >"$CG_ANNOTATE" || true
fi
if [[ -n $SINK ]]; then
  # The server flushes its last spans on SIGTERM; then the sink reports what reached it.
  stop
  trap - EXIT
  echo "sink $(tail -n1 "$OUT/sink.out")"
fi
