#!/usr/bin/env bash
# tests/auth/exchange-server.sh: a real OAuth 2.0 Token Exchange (RFC 8693) authorization server
# for tests, on 127.0.0.1: the example OpenID provider of the Go module github.com/zitadel/oidc/v3
# (version pinned in tests/auth/exchange/go.mod), built from the Go module proxy and cached by
# version. What is the library's and what is ours: tests/auth/exchange/main.go and README.md.
#
# Usage: tests/auth/exchange-server.sh build|path|start|stop|status|smoke
#   build   compile once into $KUBE_MCP_TEST_CACHE/auth-exchange-<module version>-<recipe hash>/
#           (a cache hit is instant); prints the binary's path
#   path    print the binary's path (build first if missing), for tests that spawn it themselves:
#           `exchange-as -addr 127.0.0.1:0 -users tests/auth/exchange/users.json -client-key KEY.pem`
#           prints `issuer <URL>` on stdout once it listens
#   start   build if needed, then start the server in $KUBE_MCP_EXCHANGE_RUN on a free loopback
#           port (the kernel's pick: it listens on 127.0.0.1:0, so no port race) and wait until
#           its discovery document answers; prints `export KUBE_MCP_EXCHANGE_ISSUER=... _PID=...
#           _CLIENT_KEY=... _LOG=...` lines for eval; a no-op (same output) if it already runs
#   stop    stop the server by its pid file (only if that pid is ours); a no-op if stopped
#   status  print what runs; exit 0 if it runs, 1 if not
#   smoke   start (unless running), run tests/auth/exchange-smoke.py with the project's venv,
#           stop again if it started it; exit status of the smoke check
#
# Environment (all optional):
#   KUBE_MCP_TEST_CACHE    cache root (default $HOME/.cache/kube-mcp-test): binary, module and build caches
#   KUBE_MCP_EXCHANGE_RUN  run dir (default /tmp/kube-mcp-exchange-as): pid, log, ready file, client key
#   KUBE_MCP_TEST_TIMEOUT  seconds to wait for the server to answer (default 30)
#
# I/O: writes only under the cache dir and the run dir; the server listens on 127.0.0.1 only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$ROOT/tests/auth/exchange
MODULE=github.com/zitadel/oidc/v3
# The version is the one go.mod pins (go.sum holds its hash): one place to bump it.
VERSION=$(sed -n "s#^[[:space:]]*${MODULE//./\\.}[[:space:]]\{1,\}\(v[^[:space:]]*\).*#\1#p" "$SRC/go.mod")
[[ -n $VERSION ]] || { echo "no $MODULE version in $SRC/go.mod" >&2 && exit 2; }
# Bump RECIPE when the build flags below change. Our own sources are part of the key too, so an
# edit of main.go is never hidden behind a stale binary.
RECIPE=1
SUM=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)

CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
BIN=$CACHE/auth-exchange-zitadel-oidc-$VERSION-r$RECIPE-$SUM
EXE=$BIN/exchange-as
RUN=$(realpath -m -- "${KUBE_MCP_EXCHANGE_RUN:-/tmp/kube-mcp-exchange-as}")
TIMEOUT=${KUBE_MCP_TEST_TIMEOUT:-30}
case $RUN in / | "" | "$HOME" | /tmp | /work) echo "refusing KUBE_MCP_EXCHANGE_RUN=$RUN" >&2 && exit 2 ;; esac

log() { printf '[exchange-as %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# build: the same Go environment as tests/control-plane.sh (all caches under $CACHE, static
# binaries, low priority, 2 parallel jobs), and go.sum is authoritative (-mod=readonly).

go_env() {
  export GOTOOLCHAIN=local
  export CGO_ENABLED=0
  export GOPATH=$CACHE/go
  export GOMODCACHE=$CACHE/go/pkg/mod
  export GOCACHE=$CACHE/go-build
  export GOFLAGS="-p=2 -modcacherw -buildvcs=false -mod=readonly"
  unset GOBIN GOOS GOARCH
}

gorun() { nice -n 15 go "$@"; }

cmd_build() {
  if [[ ! -x $EXE ]]; then
    mkdir -p "$CACHE"
    # A lock of its own, not control-plane.sh's: the outputs differ, Go's module and build caches
    # are safe to share concurrently, and this build need not wait behind a 30-minute k8s build.
    # The fd is closed right after, so a server started later does not inherit the lock.
    exec 9>"$CACHE/.auth-exchange-build.lock"
    flock 9
    if [[ ! -x $EXE ]]; then
      go_env
      local t0=$SECONDS tmp=$BIN/.tmp-exchange-as
      mkdir -p "$BIN"
      log "building $MODULE@$VERSION example OP into $BIN with $(go version) (nice 15)"
      (cd "$SRC" && gorun build -trimpath -ldflags "-s -w" -o "$tmp" .) ||
        die "building $SRC against $MODULE@$VERSION failed; see the go output above"
      mv "$tmp" "$EXE"
      printf '%s %s\n' "$MODULE" "$VERSION" >"$BIN/VERSIONS"
      log "built in $((SECONDS - t0))s"
    fi
    exec 9>&-
  fi
  echo "$EXE"
}

# ---------------------------------------------------------------------------------------------------
# run

# The pid from the pid file if that process is alive and is ours (started in $RUN by `start`):
# a stale pid may belong to someone else, whom we must not kill.
pid_of() {
  local pid
  [[ -f $RUN/pid ]] || return 1
  pid=$(<"$RUN/pid")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
  [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$RUN" ]] || return 1
  echo "$pid"
}

print_env() {
  printf 'export KUBE_MCP_EXCHANGE_ISSUER=%q\n' "$(<"$RUN/ready")"
  printf 'export KUBE_MCP_EXCHANGE_PID=%q\n' "$1"
  printf 'export KUBE_MCP_EXCHANGE_CLIENT_KEY=%q\n' "$RUN/client-key.pem"
  printf 'export KUBE_MCP_EXCHANGE_LOG=%q\n' "$RUN/exchange-as.log"
}

cmd_start() {
  local pid
  if pid=$(pid_of); then
    print_env "$pid"
    return 0
  fi
  cmd_build >/dev/null
  mkdir -p "$RUN"
  rm -f "$RUN/pid" "$RUN/ready"
  # Its own session, detached from this script; the inner shell writes its pid and execs the
  # server, so the pid file holds the server's pid. The client key is kept across restarts.
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
  setsid bash -c 'cd "$1" && echo $$ >pid && shift && exec "$@"' spawn "$RUN" \
    "$EXE" -addr 127.0.0.1:0 -users "$SRC/users.json" -client-key "$RUN/client-key.pem" -ready "$RUN/ready" \
    </dev/null >"$RUN/exchange-as.log" 2>&1 &
  local deadline=$((SECONDS + TIMEOUT))
  until [[ -s $RUN/ready ]] && curl -fsS -m 2 -o /dev/null "$(<"$RUN/ready")/.well-known/openid-configuration" 2>/dev/null; do
    if ((SECONDS >= deadline)) || { [[ -s $RUN/pid ]] && ! pid_of >/dev/null; }; then
      tail -n 20 "$RUN/exchange-as.log" >&2 || true
      die "the server did not answer within ${TIMEOUT}s (log: $RUN/exchange-as.log)"
    fi
    sleep 0.1
  done
  pid=$(pid_of) || die "the server is not running (log: $RUN/exchange-as.log)"
  log "issuer $(<"$RUN/ready") pid $pid log $RUN/exchange-as.log"
  print_env "$pid"
}

cmd_stop() {
  local pid i
  pid=$(pid_of) || return 0
  kill "$pid"
  for ((i = 0; i < 50; i++)); do
    [[ -e /proc/$pid ]] || break
    sleep 0.1
  done
  [[ ! -e /proc/$pid ]] || kill -9 "$pid"
  rm -f "$RUN/pid" "$RUN/ready"
  log "stopped pid $pid"
}

cmd_status() {
  local pid
  if pid=$(pid_of); then
    echo "running: pid $pid, issuer $(<"$RUN/ready"), log $RUN/exchange-as.log, binary $EXE"
    return 0
  fi
  echo "not running (binary $EXE $([[ -x $EXE ]] && echo built || echo 'not built'))"
  return 1
}

cmd_smoke() {
  local started=0 rc=0
  pid_of >/dev/null || started=1
  local envs
  envs=$(cmd_start) || return 1
  eval "$envs"
  # shellcheck source=tests/lib/python-venv.sh
  source "$ROOT/tests/lib/python-venv.sh"
  python_venv
  "$PYTHON" "$ROOT/tests/auth/exchange-smoke.py" "$KUBE_MCP_EXCHANGE_ISSUER" "$KUBE_MCP_EXCHANGE_CLIENT_KEY" || rc=$?
  ((started == 0)) || cmd_stop
  return "$rc"
}

case ${1:-} in
  build | path) cmd_build ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  smoke) cmd_smoke ;;
  *) sed -n '2,24p' "$0" >&2 && exit 2 ;;
esac
