#!/usr/bin/env bash
# bench/token-exchange.sh: what token exchange costs once its token is cached (issue 26: CPU per
# `tools/call` with a cached exchanged token within 1.1x of a static secret). One HTTP tool
# (`echo`, POSTing its message to a loopback upstream that echoes it, bench/echo-upstream.py)
# declared twice, both behind `spec.auth` validating the caller's JWT from the real token-exchange
# server of tests/auth/exchange-server.sh (the zitadel/oidc example OP; alice's token, by the
# authorization code flow through its login form). The only difference is the upstream credential:
#   A  a static shared secret header (`secretKeyRef`, `Authorization: Bearer <secret>`);
#   B  `http.auth.tokenExchange`: alice's token exchanged (client secret) for one made for the
#      upstream, obtained on the first call and then served from the runtime's token cache.
# Measured per stateless 2026-07-28 `tools/call`: instructions of mcp-runtime alone, counted by
# callgrind over a fixed window after a warm-up (as bench/auth.sh; the upstream and the
# authorization server are other processes, not counted), and, without valgrind, the runtime's
# CPU time per call (/proc/<pid>/stat through `mcp-bench load --pid`, median of rounds that
# alternate A and B). Checks that every call reached the upstream with the expected credential
# and that B made one exchange per runtime process. Writes bench/results/<date>-token-exchange.md
# (with <date>-token-exchange.notes.md appended, if there is one).
# Everything listens on 127.0.0.1; every process is stopped by its PID; every wait is bounded.
#
# Needs valgrind, Go (to build the exchange server once; cached), python3 (stdlib only) and
# `cargo build --profile profiling -p mcp-runtime -p mcp-bench`. Knobs: TE_DURATION (10s, the
# callgrind window), TE_CONCURRENCY (4), TE_CPU_DURATION (10s), TE_CPU_ROUNDS (5, 0 to skip the
# CPU figure), TE_RUNTIME and TE_BENCH (the binaries), TE_OUT (a directory for logs and dumps).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${TE_DURATION:-10s}
CONCURRENCY=${TE_CONCURRENCY:-4}
CPU_DURATION=${TE_CPU_DURATION:-10s}
CPU_ROUNDS=${TE_CPU_ROUNDS:-5}
RUNTIME=${TE_RUNTIME:-target/profiling/mcp-runtime}
BENCH=${TE_BENCH:-target/profiling/mcp-bench}
OUT=${TE_OUT:-$(mktemp -d -t kube-mcp-token-exchange-bench.XXXXXX)}
GOAL=1.1
AUDIENCE=https://tracker.example.test # what the exchanged token is made for (its `aud`)
STARTED=$SECONDS
mkdir -p "$OUT"
for tool in valgrind callgrind_control python3 curl; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
for bin in "$RUNTIME" "$BENCH"; do
  [[ -x $bin ]] || { echo "no $bin: cargo build --profile profiling -p mcp-runtime -p mcp-bench" >&2; exit 1; }
done
log() { printf '[token-exchange %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
# stop PID: stops one process this script started, waits for it and forgets it.
stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local left=() pid
  for pid in "${pids[@]}"; do [[ $pid == "$1" ]] || left+=("$pid"); done
  pids=("${left[@]}")
}
# wait_for SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds (0), at most SECONDS;
# gives up at once if COMMAND says it never will (2).
wait_for() {
  local deadline=$((SECONDS + $1)) rc
  shift
  while true; do
    rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    ((rc == 0)) && return 0
    ((rc != 2 && SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# --- the authorization server (the one tests/auth/exchange-server.sh builds), on 127.0.0.1:0 ---
exchange_as=$(tests/auth/exchange-server.sh path | tail -n1)
"$exchange_as" -addr 127.0.0.1:0 -users tests/auth/exchange/users.json \
  -client-key "$OUT/client-key.pem" -ready "$OUT/issuer" >"$OUT/as.out" 2>"$OUT/as.log" &
pids+=($!)
wait_for 30 test -s "$OUT/issuer" || { cat "$OUT/as.log" >&2; exit 1; }
issuer=$(<"$OUT/issuer")
wait_for 30 curl -fsS -m 2 "$issuer/.well-known/openid-configuration" || { cat "$OUT/as.log" >&2; exit 1; }
token_url=$(curl -fsS -m 5 "$issuer/.well-known/openid-configuration" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token_endpoint"])')
log "authorization server $issuer"

# --- the upstreams: one per variant, each checking its credential ---
# upstream MODE EXPECTED: starts bench/echo-upstream.py; prints its port. (Called with stdout
# redirected to a file, not in a command substitution, so that its pid stays in this shell.)
upstream() {
  python3 bench/echo-upstream.py "$1" "$2" >"$OUT/upstream-$1.out" 2>"$OUT/upstream-$1.log" &
  pids+=($!)
  wait_for 10 grep -q '^port ' "$OUT/upstream-$1.out" || { cat "$OUT/upstream-$1.log" >&2; exit 1; }
  awk '/^port /{print $2}' "$OUT/upstream-$1.out"
}
static_secret=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
upstream static "$static_secret" >"$OUT/port-static"
upstream exchange "$AUDIENCE" >"$OUT/port-exchange"
static_port=$(<"$OUT/port-static")
exchange_port=$(<"$OUT/port-exchange")

# --- secrets (what the operator mounts) and the two declarations ---
mkdir -p "$OUT/secrets/upstream-api" "$OUT/secrets/idp-client"
printf '%s' "$static_secret" >"$OUT/secrets/upstream-api/token"
printf '%s' kube-mcp-secret >"$OUT/secrets/idp-client/secret"
# declaration NAME SECRET PORT: the common part; the variant's credential follows on stdout.
declaration() {
  cat <<YAML
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: $1}
spec:
  auth:
    issuer: "$issuer"
    audiences: [mcp-login]
  secrets: [$2]
  tools:
    - name: echo
      description: Echoes the message through the upstream.
      inputSchema:
        type: object
        properties:
          message: {type: string, description: The text to echo.}
        required: [message]
      http:
        method: POST
        url: "http://127.0.0.1:$3/echo"
        body:
          json: {message: {\$arg: message}}
YAML
}
{
  declaration bench-static upstream-api "$static_port"
  cat <<YAML
        headers:
          - {name: Authorization, secretKeyRef: {name: upstream-api, key: token}, prefix: "Bearer "}
YAML
} >"$OUT/static.yaml"
{
  declaration bench-exchange idp-client "$exchange_port"
  cat <<YAML
        auth:
          tokenExchange:
            tokenUrl: "$token_url"
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: "$AUDIENCE"
            scope: "issues:read"
YAML
} >"$OUT/exchange.yaml"

# login FILE: alice's access token (authorization code flow through the login form of the
# example OP, as tests/python/test_token_exchange.py does) written to FILE. Tokens live 5 minutes:
# each server gets a fresh one.
login() {
  python3 - "$issuer" >"$1" <<'PY'
import base64, json, sys, urllib.error, urllib.parse, urllib.request
issuer = sys.argv[1]
client, redirect = ("mcp-login", "mcp-login-secret"), "http://127.0.0.1/callback"

class Stop(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

opener = urllib.request.build_opener(Stop)

def redirected(url, data=None):
    try:
        answer = opener.open(urllib.request.Request(url, data=data), timeout=10)
    except urllib.error.HTTPError as err:
        if err.code in (302, 303):
            return urllib.parse.urljoin(url, err.headers["Location"])
        raise
    sys.exit(f"no redirect from {url}: {answer.status}")

meta = json.load(urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10))
form = lambda **fields: urllib.parse.urlencode(fields).encode()
login = redirected(meta["authorization_endpoint"] + "?" + urllib.parse.urlencode({
    "client_id": client[0], "redirect_uri": redirect, "response_type": "code",
    "scope": "openid profile", "state": "s1"}))
request_id = urllib.parse.parse_qs(urllib.parse.urlparse(login).query)["authRequestID"][0]
callback = redirected(login.split("?")[0], form(id=request_id, username="alice", password="alice-password"))
done = redirected(callback)
assert done.startswith(redirect), done
code = urllib.parse.parse_qs(urllib.parse.urlparse(done).query)["code"][0]
token = urllib.request.Request(meta["token_endpoint"], data=form(grant_type="authorization_code", code=code, redirect_uri=redirect))
token.add_header("Authorization", "Basic " + base64.b64encode(f"{client[0]}:{client[1]}".encode()).decode())
print(json.load(urllib.request.urlopen(token, timeout=10))["access_token"])
PY
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# serve WRAPPER... -- MANIFEST: starts the runtime (under WRAPPER, e.g. valgrind) on two free
# loopback ports; sets server (its pid), port and admin once /readyz answers. A port taken
# between the pick and the bind (other builds share this machine) costs a retry, at most 3.
serve() {
  local wrapper=() manifest attempt
  while [[ $1 != -- ]]; do wrapper+=("$1") && shift; done
  manifest=$2
  for attempt in 1 2 3; do
    port=$(free_port) admin=$(free_port)
    [[ $port != "$admin" ]] || continue
    "${wrapper[@]}" "$RUNTIME" serve --manifest "$manifest" --secrets-dir "$OUT/secrets" \
      --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --ping-interval 0s \
      >"$OUT/server.$port.log" 2>&1 &
    server=$!
    pids+=("$server")
    if wait_for 120 ready; then
      return 0
    fi
    stop "$server"
    log "the runtime did not start (attempt $attempt): $(grep -m1 error "$OUT/server.$port.log" || true)"
  done
  cat "$OUT/server.$port.log" >&2
  exit 1
}
# ready: whether the runtime answers /readyz; fails at once if it exited.
ready() {
  kill -0 "$server" 2>/dev/null || return 2
  curl -fsS -m 1 "http://127.0.0.1:$admin/readyz"
}

# exchanges: the runtime's mcp_token_exchanges_total by outcome, e.g. `ok=1 cached=4000 ...`.
exchanges() {
  curl -fsS -m 5 "http://127.0.0.1:$admin/metrics" |
    awk -F'[{}"= ]+' '/^mcp_token_exchanges_total\{/ { for (i = 2; i < NF; i++) if ($i == "outcome") o = $(i + 1); n[o] += $NF }
      END { printf "ok=%d cached=%d refused=%d error=%d\n", n["ok"], n["cached"], n["refused"], n["error"] }'
}

# requests JSONL: the last record's requests, or -1 if it had errors.
requests() {
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(r["requests"] if r.get("errors", 0) == 0 else -1)' "$1"
}

# instructions VARIANT: the runtime under callgrind; sets per_call (instructions per call),
# calls (measured) and counted (its mcp_token_exchanges_total, e.g. `ok=1,cached=9000,...`).
instructions() {
  local variant=$1 dump total
  serve valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.$variant.%p" -- \
    "$OUT/$variant.yaml"
  login "$OUT/token.$variant.cg"
  local load=("$BENCH" load --addr "127.0.0.1:$port" --server "kube-mcp-$variant" --workload modern-call
    --concurrency "$CONCURRENCY" --warmup 0s --bearer-token-file "$OUT/token.$variant.cg")
  {
    "${load[@]}" --duration 2s --out "$OUT/warmup.$variant.jsonl"
    callgrind_control --instr=on "$server"
    "${load[@]}" --duration "$DURATION" --out "$OUT/cg.$variant.jsonl"
    callgrind_control --dump=measured "$server"
    callgrind_control --instr=off "$server"
  } >>"$OUT/load.log" 2>&1
  counted=$(exchanges)
  counted=${counted// /,}
  stop "$server"
  calls=$(requests "$OUT/cg.$variant.jsonl")
  ((calls > 0)) || { echo "errors in the measured window of $variant: see $OUT" >&2; exit 1; }
  dump=$(grep -l '^desc: Trigger: dump measured$' "$OUT"/cg."$variant".* | head -1 || true)
  [[ -n $dump ]] || { echo "no measured dump of $variant in $OUT" >&2; exit 1; }
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
  per_call=$((total / calls))
}

# cpu VARIANT ROUND: the runtime without valgrind; sets micros (its CPU time per call) and rps.
cpu() {
  local variant=$1 round=$2 record
  serve -- "$OUT/$variant.yaml"
  login "$OUT/token.$variant.$round"
  record=$OUT/cpu.$variant.$round.jsonl
  local load=("$BENCH" load --addr "127.0.0.1:$port" --server "kube-mcp-$variant" --workload modern-call
    --concurrency "$CONCURRENCY" --warmup 0s --bearer-token-file "$OUT/token.$variant.$round")
  {
    "${load[@]}" --duration 2s
    "${load[@]}" --duration "$CPU_DURATION" --pid "$server" --out "$record"
  } >>"$OUT/load.log" 2>&1
  stop "$server"
  (($(requests "$record") > 0)) || { echo "errors in $variant round $round: see $OUT" >&2; exit 1; }
  read -r micros rps < <(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print("%.1f %.0f" % (r["cpu_us_per_req"], r["rps"]))' "$record")
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "A: static secret, under callgrind"
instructions static
a_instr=$per_call a_requests=$calls
log "A: $a_instr instructions per call over $a_requests calls"
log "B: token exchange, under callgrind"
instructions exchange
b_instr=$per_call b_requests=$calls b_exchanges=$counted
log "B: $b_instr instructions per call over $b_requests calls ($b_exchanges)"
[[ $b_exchanges == ok=1,* ]] || { echo "B did not make exactly one exchange: $b_exchanges" >&2; exit 1; }

a_cpu=() b_cpu=() a_rps=() b_rps=()
for ((round = 1; round <= CPU_ROUNDS; round++)); do
  cpu static "$round"
  a_cpu+=("$micros") a_rps+=("$rps")
  cpu exchange "$round"
  b_cpu+=("$micros") b_rps+=("$rps")
  log "CPU round $round: A ${a_cpu[-1]} µs (${a_rps[-1]} req/s), B ${b_cpu[-1]} µs (${b_rps[-1]} req/s)"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
stats_static=$(curl -fsS -m 5 "http://127.0.0.1:$static_port/stats")
stats_exchange=$(curl -fsS -m 5 "http://127.0.0.1:$exchange_port/stats")
for stats in "$stats_static" "$stats_exchange"; do
  python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(s["refused"] != 0 or s["requests"] == 0)' "$stats" ||
    { echo "the upstream refused calls or saw none: $stats" >&2; exit 1; }
done

ratio=$(python3 -c "print(f'{$b_instr / $a_instr:.3f}')")
verdict=$(python3 -c "print('met' if $b_instr / $a_instr <= $GOAL else 'missed')")
thousands() { python3 -c "print(f'{int(\"$1\"):,}')"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
if ((CPU_ROUNDS > 0)); then
  a_med=$(median "${a_cpu[@]}") b_med=$(median "${b_cpu[@]}")
  cpu_ratio=$(python3 -c "print(f'{$b_med / $a_med:.2f}')")
  round_ratios=$(for ((i = 0; i < CPU_ROUNDS; i++)); do python3 -c "print(f'{${b_cpu[i]} / ${a_cpu[i]}:.2f}x')"; done | paste -sd, - | sed 's/,/, /g')
  cpu_table="| runtime CPU per call, µs (median of ${CPU_ROUNDS}; rounds) | ${a_med} (${a_cpu[*]}) | ${b_med} (${b_cpu[*]}) | **${cpu_ratio}x** (per round: ${round_ratios}) |
| throughput in those rounds, req/s | ${a_rps[*]} | ${b_rps[*]} | |"
else
  cpu_table=""
fi
elapsed=$((SECONDS - STARTED))
date=$(date -u +%Y-%m-%d)
report=bench/results/$date-token-exchange.md
cat >"$report" <<REPORT
# What a cached exchanged token costs ($date)

\`bench/token-exchange.sh\` (issue 26: "CPU per \`tools/call\` with a cached exchanged token within
1.1x of a static secret"). One HTTP tool, \`echo\`, POSTs its message to a loopback upstream
(\`bench/echo-upstream.py\`) that echoes it back; declared twice, identical but for the upstream
credential:

- **A, static secret**: \`headers: [{name: Authorization, secretKeyRef: ..., prefix: "Bearer "}]\`
  (a 40-character secret from \`--secrets-dir\`);
- **B, token exchange**: \`http.auth.tokenExchange\` (client \`kube-mcp\` by secret) at the real
  RFC 8693 server of \`tests/auth/exchange-server.sh\` (zitadel/oidc example OP); the caller's
  token is exchanged on the first call, in the warm-up, and every measured call takes the
  exchanged token from the runtime's cache (B's runtime counted \`mcp_token_exchanges_total\`
  ${b_exchanges} by the end of its callgrind run).

**Both** have \`spec.auth\` validating the caller's inbound JWT (alice's access token from the same
server, authorization code flow through its login form; the same kind of token, sent with every
request), so the difference measured is the upstream credential alone: in B, the token-cache
lookup (a hash-map lookup keyed by the grant and the caller's token), the header built from the
cached token, and the reply scrubbed of the exchanged token and the caller's token (A scrubs it
of its static secret).

Instructions of \`mcp-runtime\` alone (profiling build) per stateless 2026-07-28
\`tools/call\`, counted by callgrind over ${DURATION} of \`mcp-bench load --workload modern-call
--concurrency ${CONCURRENCY}\` after a 2 s warm-up; the authorization server and the upstream are
other processes, not counted. CPU time: the same runtime without valgrind, user+system from
\`/proc/<pid>/stat\` over ${CPU_DURATION} after a 2 s warm-up, A and B alternating, each round a
fresh process (and so, in B, a fresh exchange in its warm-up).

| | A: static secret | B: cached exchanged token | B/A |
|---|---:|---:|---:|
| calls measured under callgrind | $(thousands "$a_requests") | $(thousands "$b_requests") | |
| instructions per call | $(thousands "$a_instr") | $(thousands "$b_instr") | **${ratio}x** |
${cpu_table}

Goal (issue 26): at most ${GOAL}x, **${verdict}** (on instructions, the steady figure on a shared
machine; the CPU times move with the machine's load).

Every call reached the upstream with the expected credential: the static secret in A; in B a
token whose \`aud\` is \`${AUDIENCE}\` (the exchanged one, never the caller's). Upstream
counters: A \`${stats_static}\`, B \`${stats_exchange}\` (B's tokens: one exchange per
runtime process).

Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),
shared with other builds), $(uname -sr), load average ${load_before} before and ${load_after}
after. Runtime of commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- runtime || echo ' plus local changes'). The script took ${elapsed} s.

Rerun:

\`\`\`sh
cargo build --profile profiling -p mcp-runtime -p mcp-bench
bench/token-exchange.sh   # TE_DURATION (10s), TE_CONCURRENCY (4), TE_CPU_DURATION (10s), TE_CPU_ROUNDS (5)
\`\`\`
REPORT
# Hand-written notes on a run (what the profile showed, what changed) survive a rerun.
if [[ -f ${report%.md}.notes.md ]]; then
  { echo && cat "${report%.md}.notes.md"; } >>"$report"
fi
cat "$report"
log "done in ${elapsed}s; logs and dumps in $OUT"
