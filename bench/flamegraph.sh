#!/usr/bin/env bash
# bench/flamegraph.sh: where a stateless `tools/call` spends its time. Starts mcp-runtime
# (profiling build: release code with line tables) on bench/manifest.yaml on 127.0.0.1, drives it
# with `mcp-bench load --workload modern-call`, samples the server's user-space stacks with
# `perf record` (cpu-clock, DWARF call graphs: the release build keeps no frame pointers) over a
# fixed window, and renders an SVG with inferno (inferno-collapse-perf + inferno-flamegraph,
# installed once with `cargo install --locked` into ~/.cache/kube-mcp-bench/inferno-<version>).
# Prints the top functions by self cost (share of the sampled CPU time whose innermost frame they
# are; kernel frames included, as the server's CPU time includes its system time), as a markdown
# table. Stops every process by its PID; bounded in time (warm-up + duration, then
# the rendering).
#
# Needs perf and the profiling build (`cargo build --profile profiling -p mcp-runtime -p
# mcp-bench`). Knobs: FG_DURATION (10s), FG_CONCURRENCY (64), FG_PORT (18175), FG_FREQ (sampling
# Hz, 499), FG_TOP (functions listed, 15), FG_SVG (bench/results/<date>-flamegraph.svg),
# FG_TOP_OUT (also write the table to this file), FG_RUNTIME and FG_BENCH (the binaries),
# INFERNO_VERSION (0.12.8).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${FG_DURATION:-10s}
CONCURRENCY=${FG_CONCURRENCY:-64}
PORT=${FG_PORT:-18175}
FREQ=${FG_FREQ:-499}
TOP=${FG_TOP:-15}
SVG=${FG_SVG:-bench/results/$(date -u +%Y-%m-%d)-flamegraph.svg}
RUNTIME=${FG_RUNTIME:-target/profiling/mcp-runtime}
BENCH=${FG_BENCH:-target/profiling/mcp-bench}
VERSION=${INFERNO_VERSION:-0.12.8}
INFERNO=$HOME/.cache/kube-mcp-bench/inferno-$VERSION
WORK=$(mktemp -d -t kube-mcp-flamegraph.XXXXXX)
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)" >&2; exit 1; }
seconds=$(python3 -c "import re,sys; m=re.fullmatch(r'(\d+)(ms|s)', sys.argv[1]); print(int(m[1]) / (1000 if m[2] == 'ms' else 1))" "$DURATION")

if [[ ! -x $INFERNO/bin/inferno-flamegraph ]]; then
  echo "installing inferno $VERSION into $INFERNO (once)" >&2
  CARGO_INCREMENTAL=0 nice cargo install inferno --locked --version "$VERSION" --root "$INFERNO" \
    --no-track >&2
fi

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

"$RUNTIME" serve --manifest bench/manifest.yaml --listen "127.0.0.1:$PORT" \
  --admin-listen "127.0.0.1:$((PORT + 1))" --ping-interval 0s --log-level warn >"$WORK/server.log" 2>&1 &
server=$!
pids+=("$server")
for _ in $(seq 150); do
  curl -fsS -m 1 "http://127.0.0.1:$((PORT + 1))/readyz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.2
done

# The load runs 2 s of warm-up, then the recorded window, then 1 s more so that perf's window
# is all under load.
"$BENCH" load --addr "127.0.0.1:$PORT" --server kube-mcp --workload modern-call \
  --concurrency "$CONCURRENCY" --warmup 2s --duration "$(python3 -c "print(int(($seconds + 1) * 1000))")ms" \
  --out "$WORK/load.jsonl" >/dev/null 2>"$WORK/load.log" &
load=$!
pids+=("$load")
sleep 2
perf record -q -F "$FREQ" -e cpu-clock --call-graph dwarf,16384 -p "$server" -o "$WORK/perf.data" \
  -- sleep "$seconds" 2>"$WORK/perf.log" || { cat "$WORK/perf.log" >&2; exit 1; }
wait "$load" || { cat "$WORK/load.log" >&2; exit 1; }
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true

perf script -i "$WORK/perf.data" 2>/dev/null >"$WORK/perf.txt"
"$INFERNO/bin/inferno-collapse-perf" "$WORK/perf.txt" >"$WORK/collapsed.txt"
mkdir -p "$(dirname "$SVG")"
# Frames narrower than half a pixel are left out: they cannot be seen, and they made the SVG
# five times larger (3 MB).
"$INFERNO/bin/inferno-flamegraph" --minwidth 0.5 \
  --title "kube-mcp: stateless tools/call (modern-call, c=$CONCURRENCY)" \
  "$WORK/collapsed.txt" >"$SVG"
rm -f "$WORK/perf.data" "$WORK/perf.txt"

# Self cost: each collapsed stack's innermost frame, summed.
python3 - "$WORK/collapsed.txt" "$TOP" "$SVG" >"$WORK/top.md" <<'PY'
import collections, sys
path, top, svg = sys.argv[1], int(sys.argv[2]), sys.argv[3]
self_cost, total = collections.Counter(), 0
for line in open(path):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not stack or not count.isdigit():
        continue
    total += int(count)
    self_cost[stack.split(";")[-1]] += int(count)
# cpu-clock samples are weighted by their period, in nanoseconds of CPU.
print(f"Top {top} functions by self cost (perf cpu-clock, user and kernel frames, {total / 1e6:.0f} ms of "
      f"server CPU sampled; flame graph `{svg}`):\n")
print("| # | function | self ms | share |")
print("|---:|---|---:|---:|")
for i, (name, n) in enumerate(self_cost.most_common(top), 1):
    name = name.replace("|", "\\|")
    print(f"| {i} | `{name}` | {n / 1e6:.1f} | {100 * n / max(total, 1):.1f}% |")
PY
cat "$WORK/top.md"
if [[ -n ${FG_TOP_OUT:-} ]]; then cp "$WORK/top.md" "$FG_TOP_OUT"; fi
echo "flame graph: $SVG" >&2
