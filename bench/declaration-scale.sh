#!/usr/bin/env bash
# bench/declaration-scale.sh: the scale of one declaration (issue 30, item 6). For each size of
# DS_SIZES it generates a declaration shaped like an import (`mcp-bench declaration N`), then
#
#   - compiles it in process with the runtime's compiler (`mcp-bench-compile`, DS_ROUNDS rounds:
#     median wall time of parsing and of compiling), and counts the instructions of parsing and
#     compiling it under callgrind (less those of a one-tool declaration; skipped without valgrind
#     or with DS_CALLGRIND=0);
#   - serves it with the release `mcp-runtime serve` on 127.0.0.1: the time from the start of the
#     process until /readyz answers 200 (load), the idle RSS 2 s later (and of a one-tool
#     declaration, the baseline of the KiB per tool), and `tools/list` walked page by page for
#     DS_PAGES_DURATION (`mcp-bench pages`);
#
# and, for DS_RELOAD_SIZE tools, stateless `tools/call` at DS_RELOAD_RATE calls/s for
# DS_RELOAD_DURATION without reloads, then again while the manifest is rewritten every
# DS_RELOAD_EVERY (each rewrite a new version of the whole declaration: a reload)
# (`mcp-bench reload`). Every server is stopped by its PID. Writes its records (JSON) to DS_OUT
# and prints the Markdown table of bench/declaration-scale-report.py.
#
# Knobs: DS_SIZES ("100 1000 5000"; "none" for the reload run alone), DS_ROUNDS (5), DS_CALLGRIND (1), DS_PAGES_DURATION (10s),
# DS_RELOAD_SIZE (5000; empty: no reload run), DS_RELOAD_RATE (200), DS_RELOAD_CONCURRENCY (8),
# DS_RELOAD_EVERY (3s), DS_RELOAD_DURATION (30s), DS_PORT (18180; the admin port is the next),
# DS_RUNTIME, DS_BENCH, DS_COMPILE (the binaries; default target/release/…, built with
# `cargo build --release -p mcp-runtime -p mcp-bench`; DS_COMPILE=none skips the in-process
# compile and the instruction counts, to measure another runtime binary's serving alone),
# DS_OUT (default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${DS_SIZES:-100 1000 5000}
[[ $SIZES == none ]] && SIZES=
ROUNDS=${DS_ROUNDS:-5}
CALLGRIND=${DS_CALLGRIND:-1}
PAGES_DURATION=${DS_PAGES_DURATION:-10s}
RELOAD_SIZE=${DS_RELOAD_SIZE-5000}
RELOAD_RATE=${DS_RELOAD_RATE:-200}
RELOAD_CONCURRENCY=${DS_RELOAD_CONCURRENCY:-8}
RELOAD_EVERY=${DS_RELOAD_EVERY:-3s}
RELOAD_DURATION=${DS_RELOAD_DURATION:-30s}
PORT=${DS_PORT:-18180}
ADMIN=$((PORT + 1))
RUNTIME=${DS_RUNTIME:-target/release/mcp-runtime}
BENCH=${DS_BENCH:-target/release/mcp-bench}
COMPILE=${DS_COMPILE:-target/release/mcp-bench-compile}
OUT=${DS_OUT:-$(mktemp -d -t kube-mcp-declaration-scale.XXXXXX)}
mkdir -p "$OUT"
if [[ $COMPILE == none ]]; then
  CALLGRIND=0
  COMPILE=$BENCH
fi
for bin in "$RUNTIME" "$BENCH" "$COMPILE"; do
  [[ -x $bin ]] || { echo "missing $bin (cargo build --release -p mcp-runtime -p mcp-bench)" >&2; exit 1; }
done
if [[ $CALLGRIND == 1 ]] && ! command -v valgrind >/dev/null; then
  echo "valgrind not found: no instruction counts (apt-get install valgrind)" >&2
  CALLGRIND=0
fi

SERVER_PID=
stop_server() {
  if [[ -n $SERVER_PID ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap stop_server EXIT

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# Starts the server on $1 and waits for /readyz; LOAD_MS is the milliseconds it took.
LOAD_MS=
start_server() {
  local manifest=$1 started now
  started=$(date +%s%N)
  "$RUNTIME" serve --manifest "$manifest" --listen "127.0.0.1:$PORT" \
    --admin-listen "127.0.0.1:$ADMIN" --reload-interval 1s >"$OUT/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 6000); do
    if curl -sf -o /dev/null "http://127.0.0.1:$ADMIN/readyz"; then
      now=$(date +%s%N)
      LOAD_MS=$(((now - started) / 1000000))
      return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; return 1; }
    sleep 0.005
  done
  echo "the server did not become ready in time" >&2
  return 1
}

# Instructions of parsing and compiling $1 in `mcp-bench-compile` (the whole process).
instructions() {
  valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
    "$COMPILE" "$1" --rounds 1 >/dev/null 2>"$OUT/callgrind.log"
  awk '/^(summary|totals):/ {print $2; exit}' "$OUT/callgrind.out"
}

{
  echo "- $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM; $(uname -sr)"
  echo "- load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- runtime bench || echo ' (with local changes)')"
  echo "- \`$RUNTIME\` (release), \`$BENCH\`, \`$COMPILE\`"
} >"$OUT/machine.md"

"$BENCH" declaration 1 >"$OUT/decl-1.yaml"
if [[ $CALLGRIND == 1 ]]; then
  instructions "$OUT/decl-1.yaml" >"$OUT/instructions-1.txt"
fi
start_server "$OUT/decl-1.yaml"
sleep 2
echo "{\"tools\": 1, \"load_ms\": $LOAD_MS, \"rss_kib\": $(rss_kib "$SERVER_PID")}" >"$OUT/serve-1.json"
stop_server

for n in $SIZES; do
  echo "== $n tools" >&2
  "$BENCH" declaration "$n" >"$OUT/decl-$n.yaml"
  if [[ ${DS_COMPILE:-} != none ]]; then
    "$COMPILE" "$OUT/decl-$n.yaml" --rounds "$ROUNDS" >"$OUT/compile-$n.json"
    cat "$OUT/compile-$n.json" >&2
  fi
  if [[ $CALLGRIND == 1 ]]; then
    instructions "$OUT/decl-$n.yaml" >"$OUT/instructions-$n.txt"
    echo "instructions $(cat "$OUT/instructions-$n.txt")" >&2
  fi
  start_server "$OUT/decl-$n.yaml"
  sleep 2
  echo "{\"tools\": $n, \"load_ms\": $LOAD_MS, \"rss_kib\": $(rss_kib "$SERVER_PID")}" >"$OUT/serve-$n.json"
  cat "$OUT/serve-$n.json" >&2
  "$BENCH" pages --addr "127.0.0.1:$PORT" --duration "$PAGES_DURATION" >"$OUT/pages-$n.json"
  cat "$OUT/pages-$n.json" >&2
  stop_server
done

if [[ -n $RELOAD_SIZE ]]; then
  n=$RELOAD_SIZE
  echo "== reload of $n tools" >&2
  "$BENCH" declaration "$n" >"$OUT/served.yaml"
  start_server "$OUT/served.yaml"
  sleep 2
  "$BENCH" reload --addr "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --pid "$SERVER_PID" \
    --manifest "$OUT/served.yaml" --tools "$n" --every "$RELOAD_EVERY" \
    --duration "$RELOAD_DURATION" --rate "$RELOAD_RATE" \
    --concurrency "$RELOAD_CONCURRENCY" >"$OUT/reload-$n.json"
  cat "$OUT/reload-$n.json" >&2
  grep -c "manifest reloaded" "$OUT/server.log" >&2 || true
  stop_server
fi

echo "records in $OUT" >&2
python3 bench/declaration-scale-report.py "$OUT"
