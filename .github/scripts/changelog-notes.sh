#!/usr/bin/env bash
# .github/scripts/changelog-notes.sh: prints one version's section of CHANGELOG.md (Keep a
# Changelog: `## [X.Y.Z] - DATE` headings), without its heading, for the GitHub release's notes.
# Fails when the section is missing or empty. Reads only.
#
# Usage: .github/scripts/changelog-notes.sh VERSION [CHANGELOG]
set -euo pipefail
version=${1:?usage: changelog-notes.sh VERSION [CHANGELOG]}
changelog=${2:-$(dirname "$0")/../../CHANGELOG.md}
notes=$(awk -v heading="## [$version]" '
  index($0, heading) == 1 { inside = 1; next }
  inside && (/^## / || /^\[[^]]+\]: /) { exit }
  inside { print }
' "$changelog" | sed -e '/./,$!d') # drop leading blank lines; $(...) drops trailing ones
[[ -n $notes ]] || { echo "$changelog has no entries under '## [$version]'" >&2 && exit 1; }
printf '%s\n' "$notes"
