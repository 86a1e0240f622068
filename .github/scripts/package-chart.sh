#!/usr/bin/env bash
# .github/scripts/package-chart.sh: packages charts/kube-mcp for a release, pinned to the image by
# digest. The release workflow runs it, and tests/release-check.sh runs it with a fake digest.
#
# Usage: .github/scripts/package-chart.sh VERSION DIGEST OUTDIR
#   VERSION  the release's version (semver, no leading v): the chart's version and appVersion
#   DIGEST   the image index digest, sha256:<64 hex>; written into the packaged values.yaml as
#            image.digest, so the operator and the MCPServer pods it makes pull exactly that image
#   OUTDIR   where kube-mcp-VERSION.tgz is written; its path is printed
# Environment: HELM (default: helm on PATH).
# I/O: reads the chart, writes a copy of it to a temporary directory and the package to OUTDIR.
set -euo pipefail
version=${1:?usage: package-chart.sh VERSION DIGEST OUTDIR}
digest=${2:?usage: package-chart.sh VERSION DIGEST OUTDIR}
out=${3:?usage: package-chart.sh VERSION DIGEST OUTDIR}
helm=${HELM:-helm}
chart=$(cd "$(dirname "$0")/../../charts/kube-mcp" && pwd)
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "not an image digest: $digest" >&2 && exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$chart" "$work/kube-mcp"
# helm package has no --set: the default is edited in the copy. Only the `digest: ""` line of the
# top-level `image:` block changes (runtimeImage follows image.digest unless it names its own).
awk -v digest="$digest" '
  /^[^ #]/ { block = $1 }
  block == "image:" && $0 == "  digest: \"\"" { print "  digest: \"" digest "\""; done++; next }
  { print }
  END { if (done != 1) exit 1 }
' "$chart/values.yaml" >"$work/kube-mcp/values.yaml" || {
  echo "values.yaml: no 'digest: \"\"' line in the image block" >&2
  exit 1
}
mkdir -p "$out"
"$helm" package "$work/kube-mcp" --version "$version" --app-version "$version" --destination "$out" >/dev/null
echo "$out/kube-mcp-$version.tgz"
