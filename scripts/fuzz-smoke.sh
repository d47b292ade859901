#!/usr/bin/env bash
# Runs every native fuzz target of the module for a short smoke time, one
# package and one target at a time (go test -fuzz accepts only one of each).
set -euo pipefail
fuzztime=${1:-10s}
count=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort -u || true)
	for t in $targets; do
		echo "fuzz: $pkg $t ($fuzztime)"
		go test -run='^$' -fuzz="^${t}\$" -fuzztime="$fuzztime" "$pkg"
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran"
