#!/usr/bin/env bash
# tests/control-plane.sh: a real Kubernetes control plane for tests, with no containers.
#
# Builds etcd, kube-apiserver, kube-controller-manager, kubectl and helm from Go modules (cached by
# version) and runs the three servers on 127.0.0.1 only. There is no scheduler and no kubelet, so
# Pods stay Pending: enough for the operator's tests, which need the API server's real validation,
# RBAC, server-side apply, garbage collection and Deployment -> ReplicaSet -> Pod.
#
# Usage: tests/control-plane.sh build|helm|start|stop|env|status|sa-kubeconfig
#   build   compile everything once into $KUBE_MCP_TEST_CACHE/bin-<versions>/ (a cache hit is instant)
#   helm    compile only helm into the same directory, if missing, and print its path (for checks
#           that render the chart without a cluster, such as tests/release-check.sh)
#   start   build if needed, then start a fresh control plane in $KUBE_MCP_TEST_RUN and wait until
#           /readyz answers and the `default` ServiceAccount exists; a no-op if it already runs
#   stop    stop the servers by pid file and delete the run's data (logs are kept); a no-op if stopped
#   env     print `export KUBECONFIG=...` and `export PATH=...` lines: eval "$(tests/control-plane.sh env)"
#   status  print what runs; exit 0 if the control plane runs, 1 if not
#   sa-kubeconfig NAMESPACE SERVICEACCOUNT FILE [DURATION]
#           write a kubeconfig that acts as that ServiceAccount (a TokenRequest token, 2h by
#           default), so a process run locally has exactly the RBAC a pod of it would have
#
# Environment (all optional):
#   KUBE_MCP_TEST_CACHE   cache root (default $HOME/.cache/kube-mcp-test): binaries, module and build caches
#   KUBE_MCP_TEST_RUN     run dir (default /tmp/kube-mcp-cp): PKI, kubeconfigs, data, logs, pid files
#   KUBE_MCP_TEST_TIMEOUT seconds to wait for each start-up step (default 180)
#   KUBE_MCP_TEST_APISERVER_ARGS  extra kube-apiserver flags, split on whitespace (e.g. feature gates)
#   KUBE_MCP_TEST_CONTROLLER_MANAGER_ARGS  extra kube-controller-manager flags, the same way
#                         (e.g. a higher --kube-api-qps for benchmarks with thousands of objects)
#   KUBE_MCP_TEST_STORAGE etcd (default) or kine: kine is only the fallback for when etcd cannot be
#                         built; forcing it lets that path be tried before it is needed
#
# I/O: everything it writes is under the cache dir and the run dir. Every listener is on 127.0.0.1.
set -euo pipefail

# ---------------------------------------------------------------------------------------------------
# Versions. The cache key is the requested set; bin-*/VERSIONS records what was really built (it
# differs only when a fallback from shared/notes/control-plane.md had to be used).
K8S_VERSION=v1.37.2
K8S_FALLBACK_VERSION=v1.36.3 # the notes' first fallback when a module is missing from the proxy
ETCD_VERSION=v3.6.16
KINE_VERSION=v0.17.5 # storage fallback when etcd cannot be built
HELM_VERSION=v3.22.0
# Bump RECIPE when the build flags below change, so stale binaries are not reused silently.
RECIPE=1

CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
# Absolute and symlink-free, because pid_of compares it with /proc/PID/cwd.
RUN=$(realpath -m -- "${KUBE_MCP_TEST_RUN:-/tmp/kube-mcp-cp}")
TIMEOUT=${KUBE_MCP_TEST_TIMEOUT:-180}
STORAGE=${KUBE_MCP_TEST_STORAGE:-etcd}
[[ $STORAGE == etcd || $STORAGE == kine ]] || { echo "KUBE_MCP_TEST_STORAGE must be etcd or kine" >&2 && exit 2; }
BIN=$CACHE/bin-k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION-r$RECIPE
# `start` and `stop` delete the run dir: refuse anything that looks like a mistake.
case $RUN in / | "" | "$HOME" | /tmp | /work) echo "refusing KUBE_MCP_TEST_RUN=$RUN" >&2 && exit 2 ;; esac

# Server stop order matters: clients first, storage last, so nothing logs a storm of errors.
SERVERS=(kube-controller-manager kube-apiserver storage)

log() { printf '[control-plane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# build

# One Go environment for every build: all caches under $CACHE so one directory holds (and one
# `rm -rf` removes) the whole thing; -modcacherw keeps the module cache deletable.
go_env() {
  export GOTOOLCHAIN=local # the modules declare go 1.26.0; a surprise toolchain switch must fail loudly
  export CGO_ENABLED=0     # static binaries, no C toolchain needed
  export GOPATH=$CACHE/go
  export GOMODCACHE=$CACHE/go/pkg/mod
  export GOCACHE=$CACHE/go-build
  # -p=2: the machine has 2 cores and others (cargo) compile on it too.
  export GOFLAGS="-p=2 -modcacherw -buildvcs=false"
  unset GOBIN GOOS GOARCH
}

# Every go command runs at low priority so it does not starve a Rust build on the same machine.
gorun() { nice -n 15 go "$@"; }

built() {
  local b
  for b in kube-apiserver kube-controller-manager kubectl helm; do
    [[ -x $BIN/$b ]] || return 1
  done
  if [[ $STORAGE == kine ]]; then [[ -x $BIN/kine ]]; else [[ -x $BIN/etcd || -x $BIN/kine ]]; fi
}

# Appends "name version [note]" to VERSIONS, which `status` and `build` print.
record() { printf '%s\n' "$*" >>"$BIN/VERSIONS"; }

# build_k8s VERSION: kube-apiserver, kube-controller-manager and kubectl from k8s.io/kubernetes.
# Returns 2 when the modules cannot be resolved (the caller then tries the fallback version),
# 1 when they resolve but do not compile (a fallback would only hide that).
build_k8s() {
  local v=$1 src=$CACHE/src/k8s-$1 minor staging_v gomod m
  minor=${v#v1.}
  minor=${minor%%.*}
  staging_v=v0.${v#v1.} # staging modules are tagged v0.<minor>.<patch> for kubernetes v1.<minor>.<patch>
  rm -rf "$src"
  mkdir -p "$src"
  # kubernetes' go.mod requires its staging modules (k8s.io/api, client-go, ...) at v0.0.0 and
  # replaces them with ./staging/src/...; replace directives of a dependency are ignored, so this
  # scratch module must replace each one with its published tag. The list changes between releases,
  # hence it is read from that very go.mod rather than written here.
  if ! (cd "$src" && gorun mod download -json "k8s.io/kubernetes@$v" >download.json); then
    log "k8s.io/kubernetes@$v is not available: $(grep '"Error"' "$src/download.json" 2>/dev/null || true)"
    return 2
  fi
  gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' "$src/download.json")
  [[ -f $gomod ]] || die "no go.mod path in 'go mod download -json k8s.io/kubernetes@$v'"
  local staging=()
  # Both forms: inside a `replace (` block and a one-line `replace k8s.io/x => ./staging/...`.
  # k8s.io/utils and k8s.io/kube-openapi are not staging modules and so are never matched.
  while read -r m; do staging+=("$m"); done < <(
    sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\./staging/.*#\2#p' "$gomod"
  )
  ((${#staging[@]} > 10)) || die "found only ${#staging[@]} staging modules in $gomod; the go.mod format changed?"
  log "k8s $v: replacing ${#staging[@]} staging modules with $staging_v"
  local edits=(-require="k8s.io/kubernetes@$v")
  for m in "${staging[@]}"; do edits+=(-replace="$m=$m@$staging_v"); done
  # `tool` directives make `go mod tidy` resolve exactly the packages the build needs.
  edits+=(-tool=k8s.io/kubernetes/cmd/kube-apiserver -tool=k8s.io/kubernetes/cmd/kube-controller-manager
    -tool=k8s.io/kubernetes/cmd/kubectl)
  if ! (cd "$src" && gorun mod init kube-mcp-test/k8s && gorun mod edit "${edits[@]}" && gorun mod tidy); then
    log "k8s $v: module resolution failed (see the go error above for the exact module)"
    return 2
  fi
  # Stamp the version: unstamped servers say v0.0.0-master, which breaks helm's kubeVersion checks
  # and any client that compares versions.
  local ld="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  local out=$BIN/.tmp-k8s
  rm -rf "$out"
  mkdir -p "$out"
  (cd "$src" && gorun build -trimpath -ldflags "$ld" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl) || return 1
  mv "$out"/* "$BIN/" && rmdir "$out"
}

# build_scratch_tool NAME MODULE VERSION: `go install MODULE@VERSION` refuses modules whose go.mod
# has replace directives (etcd's, kine's), so build them from a scratch module that requires them.
build_scratch_tool() {
  local name=$1 mod=$2 v=$3 src=$CACHE/src/$1-$3
  rm -rf "$src"
  mkdir -p "$src"
  (cd "$src" && gorun mod init "kube-mcp-test/$name" && gorun get -tool "$mod@$v") || return 2
  (cd "$src" && gorun build -trimpath -ldflags "-s -w" -o "$BIN/.tmp-$name" "$mod") || return 1
  mv "$BIN/.tmp-$name" "$BIN/$name"
}

build_helm() {
  # helm has no replace directives, so `go install` works. Stamp its version (else `helm version`
  # says v3.22 with no patch) and its default Kubernetes version (else `helm template` and
  # `helm lint` check charts' kubeVersion against v1.20).
  local v=$HELM_VERSION minor=${K8S_BUILT_VERSION#v1.} ld="-s -w"
  minor=${minor%%.*}
  ld+=" -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.metadata="
  ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  local pkg
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ld+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  local out=$BIN/.tmp-helm
  rm -rf "$out"
  mkdir -p "$out"
  (cd "$out" && GOBIN=$out gorun install -trimpath -ldflags "$ld" "helm.sh/helm/v3/cmd/helm@$v") || return 1
  mv "$out/helm" "$BIN/helm" && rmdir "$out"
}

# The same helm `build` makes, alone: a chart check needs no cluster. It is stamped with the
# requested Kubernetes version (a later `build` keeps it, even if kubernetes falls back).
cmd_helm() {
  # Built helm is only ever moved into place whole and never replaced: no lock needed to use it
  # (a `build` may hold the lock for half an hour meanwhile).
  if [[ -x $BIN/helm ]]; then
    echo "$BIN/helm"
    return 0
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.build.lock"
  flock 9
  if ! [[ -x $BIN/helm ]]; then
    go_env
    mkdir -p "$BIN"
    K8S_BUILT_VERSION=$K8S_VERSION
    log "building helm $HELM_VERSION into $BIN (cold: a few minutes)"
    build_helm || die "building helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed; see the go output above"
  fi
  exec 9>&-
  echo "$BIN/helm"
}

cmd_build() {
  mkdir -p "$CACHE"
  # Two builds at once (say, two test scripts) would race on the same output files. The lock's fd
  # is closed again right after, or the servers `start` spawns would inherit it and hold the lock.
  exec 9>"$CACHE/.build.lock"
  flock 9
  build_locked
  exec 9>&-
}

build_locked() {
  if built; then
    log "binaries cached in $BIN ($(tr '\n' ';' <"$BIN/VERSIONS" 2>/dev/null))"
    return 0
  fi
  go_env
  local t0=$SECONDS rc
  mkdir -p "$BIN"
  log "building into $BIN with $(go version) (GOFLAGS=$GOFLAGS, nice 15); a cold build takes 10-30 minutes"
  : >"$BIN/VERSIONS"

  K8S_BUILT_VERSION=$K8S_VERSION
  if ! [[ -x $BIN/kube-apiserver && -x $BIN/kube-controller-manager && -x $BIN/kubectl ]]; then
    rc=0
    build_k8s "$K8S_VERSION" || rc=$?
    if ((rc == 2)); then
      log "FALLBACK: k8s.io/kubernetes $K8S_VERSION could not be resolved; trying $K8S_FALLBACK_VERSION"
      K8S_BUILT_VERSION=$K8S_FALLBACK_VERSION
      rc=0
      build_k8s "$K8S_FALLBACK_VERSION" || rc=$?
    fi
    ((rc == 0)) || die "building kubernetes $K8S_BUILT_VERSION failed (rc $rc); see the go output above"
    log "kubernetes $K8S_BUILT_VERSION built ($((SECONDS - t0))s so far)"
  else
    K8S_BUILT_VERSION=$("$BIN/kubectl" version --client -o yaml | sed -n 's/^ *gitVersion: //p')
  fi
  record "kubernetes $K8S_BUILT_VERSION"

  if [[ $STORAGE == kine && ! -x $BIN/kine ]]; then
    build_scratch_tool kine github.com/k3s-io/kine "$KINE_VERSION" || die "building github.com/k3s-io/kine@$KINE_VERSION failed"
    log "kine built ($((SECONDS - t0))s so far)"
  elif ! [[ -x $BIN/etcd || -x $BIN/kine ]]; then
    rc=0
    build_scratch_tool etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" || rc=$?
    if ((rc != 0)); then
      log "FALLBACK: go.etcd.io/etcd/server/v3@$ETCD_VERSION failed (rc $rc); building github.com/k3s-io/kine@$KINE_VERSION"
      build_scratch_tool kine github.com/k3s-io/kine "$KINE_VERSION" || die "neither etcd nor kine could be built"
    fi
    log "storage built ($((SECONDS - t0))s so far)"
  fi
  if [[ -x $BIN/etcd ]]; then record "etcd $ETCD_VERSION"; fi
  if [[ -x $BIN/kine ]]; then record "kine $KINE_VERSION"; fi

  if ! [[ -x $BIN/helm ]]; then
    build_helm || die "building helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed; see the go output above"
  fi
  record "helm $HELM_VERSION"
  log "build done in $((SECONDS - t0))s; cache uses $(du -sh "$CACHE" | cut -f1)"
}

# ---------------------------------------------------------------------------------------------------
# run

# The storage server is etcd, or kine when asked for or when only the fallback could be built.
storage_bin() {
  if [[ $STORAGE == etcd && -x $BIN/etcd ]]; then echo "$BIN/etcd"; else echo "$BIN/kine"; fi
}

# pid_of NAME: the pid from NAME's pid file if that process is alive and is ours. A pid file alone is
# not proof: after a reboot or a long time the pid may belong to someone else, whom we must not kill.
pid_of() {
  local f=$RUN/pids/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  # spawn starts every server with $RUN as its working directory. (Servers started by an earlier
  # version of this script are recognised by the $RUN paths on their command line instead.)
  [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$RUN" ]] ||
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$RUN/" || return 1
  echo "$pid"
}

all_running() {
  local s
  for s in "${SERVERS[@]}"; do pid_of "$s" >/dev/null || return 1; done
}

# Ports already listening on this machine (TCP, v4 and v6), from /proc: no extra tools needed.
# (awk prints the hex port, bash converts it: Debian's mawk has no strtonum.)
listening_ports() {
  local hex
  while read -r hex; do echo $((16#$hex)); done < <(
    awk 'FNR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
  )
}

# free_port VAR: set VAR to a port nobody listens on, below the kernel's ephemeral range (32768+) so an outgoing
# connection does not take it between now and the server's bind. Ports handed out in this run are
# remembered in TAKEN so two servers never get the same one (hence a variable name, not $(...),
# which would run in a subshell and forget TAKEN).
TAKEN=" "
free_port() {
  local used p i
  used=" $(listening_ports | tr '\n' ' ')$TAKEN"
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    if [[ $used != *" $p "* ]]; then
      TAKEN+="$p "
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  die "no free port found"
}

# spawn NAME BINARY ARGS...: start a server detached from this script (its own session, so it
# survives the script and a Ctrl-C in the caller's terminal), with stdout+stderr in logs/NAME.log.
# The inner shell writes its own pid and then execs the server, so the pid file is the server's pid;
# it runs in $RUN, which is how pid_of tells our servers from unrelated processes.
spawn() {
  local name=$1
  shift
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
  setsid bash -c 'cd "$1" && echo $$ >"$2" && shift 2 && exec "$@"' spawn "$RUN" "$RUN/pids/$name.pid" "$@" \
    </dev/null >"$RUN/logs/$name.log" 2>&1 9>&- &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s $RUN/pids/$name.pid ]] && return 0
    sleep 0.1
  done
  die "$name did not start; $(tail -n 20 "$RUN/logs/$name.log")"
}

# wait_for NAME WHAT CMD...: retry CMD until it succeeds, NAME dies, or the timeout passes.
wait_for() {
  local name=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    pid_of "$name" >/dev/null || fail_start "$name exited while waiting for $what"
    ((SECONDS < deadline)) || fail_start "$name: no $what after ${TIMEOUT}s"
    sleep 0.5
  done
}

fail_start() {
  log "ERROR: $*"
  local f
  for f in "$RUN"/logs/*.log; do
    [[ -f $f ]] || continue
    printf '\n----- last 30 lines of %s -----\n' "$f" >&2
    tail -n 30 "$f" >&2
  done
  exit 1 # the EXIT trap set by cmd_start stops what did start
}

# The apiserver answers HTTPS with our CA; the admin client cert proves who we are.
api_get() {
  curl -fsS --max-time 5 --cacert "$RUN/pki/ca.crt" --cert "$RUN/pki/admin.crt" --key "$RUN/pki/admin.key" \
    "https://127.0.0.1:${API_PORT:-0}$1"
}

# sign NAME SUBJECT EXTENSIONS: a key and a certificate signed by the test CA. The extensions come
# from a config file so this works with any OpenSSL >= 1.1 and no system openssl.cnf defaults leak in.
sign() {
  local name=$1 subj=$2 ext=$3 d=$RUN/pki
  printf '[ext]\n%s\n' "$ext" >"$d/$name.ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$d/$name.key" -subj "$subj" -out "$d/$name.csr" 2>/dev/null
  openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
    -extfile "$d/$name.ext" -extensions ext -out "$d/$name.crt" 2>/dev/null
  rm -f "$d/$name.csr" "$d/$name.ext"
}

make_pki() {
  local d=$RUN/pki
  mkdir -p "$d"
  chmod 700 "$d"
  printf '[req]\ndistinguished_name=dn\n[dn]\n[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n' >"$d/ca.cnf"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$d/ca.key" -subj "/CN=kube-mcp-test-ca" \
    -days 30 -config "$d/ca.cnf" -extensions ca -out "$d/ca.crt" 2>/dev/null
  # The serving cert also names the in-cluster service names and IP, as a real cluster's does.
  sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1"
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  # O=system:masters is bound to cluster-admin by the apiserver's bootstrap policy.
  sign admin "/O=system:masters/CN=kube-mcp-admin" "$client"
  # This CN has its own bootstrap ClusterRole and binding: the controller-manager runs with what a
  # real one gets, not as an admin.
  sign controller-manager "/CN=system:kube-controller-manager" "$client"
  # Service-account tokens: the apiserver signs them with the private key and verifies with the
  # public one; the controller-manager's token controller signs legacy tokens with the private key.
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$d/sa.key" 2>/dev/null
  openssl pkey -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  rm -f "$d/ca.srl"
}

# kubeconfig FILE USER: a kubeconfig with the certificates embedded (*-data), which both kubectl and
# kube-rs read, and which stays valid if the file is copied elsewhere.
kubeconfig() {
  local file=$1 user=$2 d=$RUN/pki
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-mcp-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$d/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$d/$user.crt")
    client-key-data: $(base64 -w0 <"$d/$user.key")
contexts:
- name: kube-mcp-test
  context: {cluster: kube-mcp-test, user: $user}
current-context: kube-mcp-test
EOF
  chmod 600 "$file"
}

start_storage() {
  local bin
  bin=$(storage_bin)
  if [[ $bin == */etcd ]]; then
    # Client and peer URLs on 127.0.0.1 (etcd's defaults are localhost too, but say so); no fsync:
    # test data is thrown away, and fsync on a shared disk makes the apiserver slow to start.
    spawn storage "$bin" --name=kube-mcp-test --data-dir="$RUN/data/etcd" \
      --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls="http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$PEER_PORT" \
      --initial-cluster="kube-mcp-test=http://127.0.0.1:$PEER_PORT" --unsafe-no-fsync --log-level=warn
    wait_for storage "etcd /health" curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
  else
    # kine's defaults listen on all interfaces: both listeners are set explicitly.
    spawn storage "$bin" --endpoint="memory://" --listen-address="127.0.0.1:$ETCD_PORT" \
      --metrics-bind-address=0
    wait_for storage "kine port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$ETCD_PORT"
  fi
}

start_apiserver() {
  local p=$RUN/pki extra=()
  # Word splitting is the point here: a space-separated list of extra flags.
  # shellcheck disable=SC2206
  [[ -n ${KUBE_MCP_TEST_APISERVER_ARGS:-} ]] && extra=($KUBE_MCP_TEST_APISERVER_ARGS)
  # --advertise-address: without it start-up fails on a host with no default route.
  # --endpoint-reconciler-type=none: no kubelet-less endpoint juggling for the `kubernetes` Service.
  # --cert-dir: keep it from writing into /var/run/kubernetes.
  spawn kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --cert-dir="$RUN/pki" --endpoint-reconciler-type=none \
    --service-cluster-ip-range=10.96.0.0/16 \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --client-ca-file="$p/ca.crt" --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --allow-privileged=true --profiling=false \
    "${extra[@]}"
  wait_for kube-apiserver "/readyz" api_get /readyz
}

start_controller_manager() {
  local p=$RUN/pki extra=()
  # shellcheck disable=SC2206 # a space-separated list of extra flags
  [[ -n ${KUBE_MCP_TEST_CONTROLLER_MANAGER_ARGS:-} ]] && extra=($KUBE_MCP_TEST_CONTROLLER_MANAGER_ARGS)
  # --secure-port=0: no listener at all (its default would be 0.0.0.0:10257).
  # --use-service-account-credentials: each controller acts as its own ServiceAccount, as in a
  # real cluster, so RBAC problems show up here and not only in production.
  spawn kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$RUN/controller-manager.kubeconfig" --secure-port=0 --leader-elect=false \
    --use-service-account-credentials --service-account-private-key-file="$p/sa.key" \
    --root-ca-file="$p/ca.crt" --cluster-signing-cert-file="$p/ca.crt" \
    --cluster-signing-key-file="$p/ca.key" --cluster-name=kube-mcp-test --controllers='*' \
    --profiling=false "${extra[@]}"
  # The ServiceAccount controller creates each namespace's `default` ServiceAccount; until it has,
  # Pods (which default to it) are refused, so a test starting right away would flake.
  wait_for kube-controller-manager "default/default ServiceAccount" \
    "$BIN/kubectl" --kubeconfig="$RUN/admin.kubeconfig" -n default get serviceaccount default
}

on_start_exit() {
  local rc=$?
  if ((rc != 0)); then
    log "start failed; stopping what did start (logs kept in $RUN/logs)"
    stop_servers
    clean_run
  fi
}

cmd_start() {
  cmd_build
  if all_running; then
    # shellcheck source=/dev/null
    source "$RUN/ports.env"
    if api_get /readyz >/dev/null 2>&1; then
      log "already running (apiserver https://127.0.0.1:$API_PORT)"
      return 0
    fi
  fi
  # A half-dead earlier run (say one server crashed) is cleared, then everything starts fresh.
  stop_servers
  rm -rf "$RUN"
  mkdir -p "$RUN/pids" "$RUN/logs" "$RUN/data"
  trap on_start_exit EXIT
  local t0=$SECONDS
  make_pki
  free_port ETCD_PORT
  free_port PEER_PORT
  free_port API_PORT
  printf 'ETCD_PORT=%s\nPEER_PORT=%s\nAPI_PORT=%s\n' "$ETCD_PORT" "$PEER_PORT" "$API_PORT" >"$RUN/ports.env"
  kubeconfig "$RUN/admin.kubeconfig" admin
  kubeconfig "$RUN/controller-manager.kubeconfig" controller-manager
  start_storage
  start_apiserver
  start_controller_manager
  trap - EXIT
  log "control plane up in $((SECONDS - t0))s: https://127.0.0.1:$API_PORT, kubeconfig $RUN/admin.kubeconfig"
  log "use it with: eval \"\$($0 env)\""
}

# stop_servers: TERM each server, wait, then KILL if it would not go. Only pids that pid_of
# confirms as ours are signalled.
stop_servers() {
  local s pid i
  for s in "${SERVERS[@]}"; do
    pid=$(pid_of "$s") || {
      rm -f "$RUN/pids/$s.pid"
      continue
    }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$s (pid $pid) ignored SIGTERM for 10s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$RUN/pids/$s.pid"
  done
}

cmd_stop() {
  [[ -d $RUN ]] || {
    log "not running (no $RUN)"
    return 0
  }
  stop_servers
  clean_run
  log "stopped; logs kept in $RUN/logs"
}

# Data, keys and kubeconfigs are useless without the servers; logs stay for a post-mortem.
clean_run() {
  rm -rf "$RUN/data" "$RUN/pki" "$RUN/pids" "$RUN"/*.kubeconfig "$RUN/ports.env"
}

cmd_env() {
  all_running || log "warning: the control plane is not running; start it with: $0 start"
  printf 'export KUBECONFIG=%q\n' "$RUN/admin.kubeconfig"
  # shellcheck disable=SC2016 # $PATH is expanded by the caller's eval, not here
  printf 'export PATH=%q:"$PATH"\n' "$BIN"
}

cmd_sa_kubeconfig() {
  local namespace=${1:-} account=${2:-} out=${3:-} duration=${4:-2h}
  [[ -n $namespace && -n $account && -n $out ]] ||
    die "usage: $0 sa-kubeconfig NAMESPACE SERVICEACCOUNT FILE [DURATION]"
  local admin=(env KUBECONFIG="$RUN/admin.kubeconfig" "$BIN/kubectl")
  local token server ca
  token=$("${admin[@]}" -n "$namespace" create token "$account" --duration="$duration")
  server=$("${admin[@]}" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  ca=$("${admin[@]}" config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  (
    umask 077 # the file holds a bearer token
    cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: kube-mcp-test, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $account, user: {token: "$token"}}]
contexts: [{name: $account, context: {cluster: kube-mcp-test, user: $account}}]
current-context: $account
EOF
  )
}

cmd_status() {
  local s pid up=0 total=0
  if [[ -f $BIN/VERSIONS ]]; then
    log "binaries: $BIN ($(tr '\n' ';' <"$BIN/VERSIONS"))"
  else
    log "binaries: not built"
  fi
  # shellcheck source=/dev/null
  [[ -f $RUN/ports.env ]] && source "$RUN/ports.env"
  for s in "${SERVERS[@]}"; do
    total=$((total + 1))
    if pid=$(pid_of "$s"); then
      up=$((up + 1))
      echo "$s: running (pid $pid)"
    else
      echo "$s: not running"
    fi
  done
  if ((up == total)) && api_get /readyz >/dev/null 2>&1; then
    echo "running: https://127.0.0.1:$API_PORT (readyz ok), KUBECONFIG=$RUN/admin.kubeconfig"
    return 0
  fi
  echo "not running"
  return 1
}

case ${1:-} in
build) cmd_build ;;
helm) cmd_helm ;;
start) cmd_start ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
sa-kubeconfig) cmd_sa_kubeconfig "${@:2}" ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
