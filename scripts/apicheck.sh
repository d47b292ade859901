#!/usr/bin/env bash
# Fails when the library's API changed incompatibly since the recorded baseline
# (scripts/apidiff/baseline.api, written by `scripts/apicheck.sh -record` from
# the baseline commit) and CHANGELOG.md does not name the change. apidiff exits
# 0 whatever it finds, so this script judges its output: every incompatible
# change it prints for a library package (examples' and scripts' main packages
# are not API) must appear in CHANGELOG.md as "`ident`: migration" on one line,
# where ident is apidiff's identifier with its package path
# (`latency/shard.(*Recorder).Outside`) or the package's last element
# (`shard.(*Recorder).Outside`).
set -euo pipefail
cd "$(dirname "$0")/.."
module=github.com/netperfkit/netperfkit
base=scripts/apidiff/baseline.api
apidiff() { go run golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4 "$@"; }

if [ "${1:-}" = "-record" ]; then
	apidiff -m -w "$base" "$module"
	git rev-parse HEAD >scripts/apidiff/BASELINE
	echo "apicheck: recorded the API of $(cat scripts/apidiff/BASELINE) in $base"
	exit 0
fi

out=$(apidiff -m -incompatible "$base" "$module" 2>&1) || {
	echo "$out" | grep -v '^Ignoring internal package' >&2
	echo "apicheck: apidiff failed" >&2
	exit 1
}
missing=0
while IFS= read -r line; do
	case $line in "- "*) ;; *) continue ;; esac
	id=${line#- }
	id=${id%%: *}
	id=${id#./}
	case $id in examples/* | scripts/*) continue ;; esac
	pkg=${id%%.*}
	short="${pkg##*/}.${id#*.}"
	if grep -qE "\`($(printf '%s' "$id" | sed 's/[][\.*^$()+?{}|/]/\\&/g')|$(printf '%s' "$short" | sed 's/[][\.*^$()+?{}|/]/\\&/g'))\`: *[^ ]" CHANGELOG.md; then
		continue
	fi
	echo "apicheck: not in CHANGELOG.md: $line" >&2
	missing=1
done <<<"$out"
if [ "$missing" -ne 0 ]; then
	echo "apicheck: name each incompatible change above in CHANGELOG.md's Unreleased section, as \"- \`ident\`: how to migrate\"" >&2
	exit 1
fi
echo "apicheck: every incompatible change since $(cat scripts/apidiff/BASELINE 2>/dev/null || echo the baseline) is in CHANGELOG.md"
