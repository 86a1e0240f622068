#!/usr/bin/env bash
# tests/release-check.sh: the release pipeline's cheap checks (lint stage; no cargo, no docker).
#
# Usage: tests/release-check.sh             every check below
#        tests/release-check.sh versions [VERSION]
#                                           only the version check; with VERSION (a tag without
#                                           its v), also that it is the version (release workflow)
#
# versions   Cargo.toml's workspace version, the chart's version and appVersion agree, are semver,
#            CHANGELOG.md has a non-empty section for that version, and the READMEs' install
#            commands name it
# stages     .github/workflows/ci.yml runs every stage `tests/run.sh --list` names
# workflows  actionlint passes on .github/workflows/*.yml (built from its Go module, cached by
#            version; it runs shellcheck on `run:` scripts only where shellcheck is installed)
# chart      the chart packaged as the release packages it (a test version, a fake digest)
#            renders a Deployment whose image and --runtime-image are image@sha256:...
#
# I/O: builds actionlint and helm (tests/control-plane.sh helm) into $KUBE_MCP_TEST_CACHE
# (default ~/.cache/kube-mcp-test) on first use; writes packages to a temporary directory.
# shellcheck disable=SC2317 # the checks are functions called through check()
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${KUBE_MCP_TEST_CACHE:-$HOME/.cache/kube-mcp-test}
ACTIONLINT_VERSION=v1.7.12

failed=0
check() {
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    failed=1
  fi
}
fail() { echo "  $*" >&2 && return 1; }

# --- versions
cargo_version() { awk '/^\[/ { s = $0 } s == "[workspace.package]" && $1 == "version" { gsub(/"/, "", $3); print $3 }' Cargo.toml; }
chart_field() { sed -n "s/^$1: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" charts/kube-mcp/Chart.yaml; }
SEMVER='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'

versions_agree() {
  local expected=${1:-} cargo chart app
  cargo=$(cargo_version)
  chart=$(chart_field version)
  app=$(chart_field appVersion)
  [[ $cargo =~ $SEMVER ]] || fail "Cargo.toml [workspace.package] version '$cargo' is not semver" || return 1
  [[ $chart == "$cargo" && $app == "$cargo" ]] ||
    fail "Cargo.toml says $cargo, Chart.yaml version $chart and appVersion $app: all three must agree" || return 1
  [[ -z $expected || $expected == "$cargo" ]] ||
    fail "the tag says $expected but the sources say $cargo (bump Cargo.toml, Chart.yaml, CHANGELOG.md)" || return 1
  .github/scripts/changelog-notes.sh "$cargo" >/dev/null || return 1
  local doc
  for doc in README.md charts/kube-mcp/README.md; do
    grep -qF "oci://ghcr.io/kube-mcp/charts/kube-mcp --version $cargo " "$doc" ||
      fail "$doc: the install command does not name --version $cargo" || return 1
  done
}

# --- stages
ci_stages() {
  local listed matrix
  listed=$(tests/run.sh --list | awk '{ print $1 }' | sort | tr '\n' ' ')
  # ci.yml: the `lint` job, then one job per name of its `stage: [...]` matrix.
  matrix=$(sed -n 's/^ *stage: *\[\(.*\)\] *$/\1/p' .github/workflows/ci.yml | tr -d ' ' | tr ',' '\n')
  matrix=$(printf 'lint\n%s\n' "$matrix" | sort | tr '\n' ' ')
  [[ $listed == "$matrix" ]] || fail "tests/run.sh --list names: $listed; ci.yml runs: $matrix"
}

# --- workflows
actionlint_bin() {
  local dir=$CACHE/actionlint-$ACTIONLINT_VERSION
  if [[ ! -x $dir/actionlint ]]; then
    echo "building actionlint $ACTIONLINT_VERSION (once; cached in $dir)" >&2
    mkdir -p "$dir"
    # The Go environment of tests/control-plane.sh: one cache root for every Go build.
    (
      export GOTOOLCHAIN=local CGO_ENABLED=0 GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/pkg/mod \
        GOCACHE=$CACHE/go-build GOFLAGS="-p=2 -modcacherw -buildvcs=false" GOBIN=$dir/.tmp
      unset GOOS GOARCH
      nice -n 15 go install -trimpath -ldflags "-s -w" "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
    ) >&2 && mv "$dir/.tmp/actionlint" "$dir/actionlint" && rmdir "$dir/.tmp"
  fi
  echo "$dir/actionlint"
}

workflows_lint() {
  local actionlint
  actionlint=$(actionlint_bin) || return 1
  "$actionlint" -no-color .github/workflows/*.yml
}

# --- chart
chart_pins_digest() {
  local out rc=0
  out=$(mktemp -d)
  packaged_chart_checks "$out" || rc=1
  rm -rf "$out"
  return "$rc"
}

# packaged_chart_checks DIR: package into DIR, then read the package back.
packaged_chart_checks() {
  local out=$1 helm version=9.8.7-check.1 digest tgz rendered image
  helm=$(tests/control-plane.sh helm) || return 1
  digest=sha256:$(printf 'kube-mcp release check' | sha256sum | cut -c1-64)
  tgz=$(HELM=$helm .github/scripts/package-chart.sh "$version" "$digest" "$out") || return 1
  image=$(sed -n 's/^  repository: //p' charts/kube-mcp/values.yaml | head -n 1)@$digest
  "$helm" show chart "$tgz" >"$out/Chart.yaml"
  grep -qx "version: $version" "$out/Chart.yaml" || fail "packaged chart: version is not $version" || return 1
  grep -qx "appVersion: $version" "$out/Chart.yaml" || fail "packaged chart: appVersion is not $version" || return 1
  rendered=$("$helm" template kube-mcp "$tgz" -n kube-mcp-system --show-only templates/deployment.yaml) || return 1
  grep -qxF "          image: \"$image\"" <<<"$rendered" ||
    fail "rendered Deployment: the operator's image is not $image" || return 1
  grep -qxF -- "            - --runtime-image=$image" <<<"$rendered" ||
    fail "rendered Deployment: --runtime-image is not $image" || return 1
  grep -qF "app.kubernetes.io/version: \"$version\"" <<<"$rendered" ||
    fail "rendered Deployment: app.kubernetes.io/version is not $version" || return 1
  # The digest is also what a plain install of the package uses: no tag anywhere in the output.
  ! "$helm" template kube-mcp "$tgz" | grep -q "${image%@*}:" ||
    fail "a rendered object still names the image by tag" || return 1
}

if [[ ${1:-} == versions ]]; then
  check "versions agree${2:+ with the tag ($2)}" versions_agree "${2:-}"
  exit "$failed"
fi
[[ $# == 0 ]] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2 && exit 2; }
check "Cargo.toml, Chart.yaml and CHANGELOG.md name one version" versions_agree
check "ci.yml runs every stage of tests/run.sh" ci_stages
check "actionlint $ACTIONLINT_VERSION passes on .github/workflows" workflows_lint
check "the packaged chart pins the image by digest" chart_pins_digest
exit "$failed"
