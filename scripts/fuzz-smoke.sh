#!/usr/bin/env bash
# Runs every native fuzz target of the module for a short smoke budget, one
# package and one target at a time (go test -fuzz accepts only one of each).
#
# The budget is passed to -fuzztime as is. CI gives an execution count (for
# example 300000x), not a duration: with a duration, Go's fuzz coordinator up
# to go1.26 can report a spurious "context deadline exceeded" failure when the
# deadline races an in-flight worker (go.dev/issue/75804, fixed in go1.27). A
# count has no deadline to race. -timeout still bounds every target in time.
set -euo pipefail
budget=${1:-300000x}
timeout=${FUZZ_TIMEOUT:-5m}
count=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort -u || true)
	for t in $targets; do
		echo "fuzz: $pkg $t ($budget)"
		go test -run='^$' -fuzz="^${t}\$" -fuzztime="$budget" -timeout="$timeout" "$pkg"
		count=$((count + 1))
	done
done
if [ "$count" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $count targets ran"
