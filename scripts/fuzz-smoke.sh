#!/usr/bin/env bash
# Runs every native fuzz target of the module for a short smoke time, one
# package and one target at a time (go test -fuzz accepts only one of each).
#
# Usage: fuzz-smoke.sh [FUZZTIME]   (a duration such as 10s, or a count such as 300000x)
#
# Up to go1.26, Go's fuzz coordinator can fail a duration-bounded run with a
# bare "context deadline exceeded" when the deadline races an in-flight worker
# (go.dev/issue/75804, fixed in go1.27); no input is at fault and none is
# written. When a run fails with exactly that and wrote no failing input, the
# target runs again with an execution-count budget, which has no deadline to
# race. Any other failure, and every failure that wrote an input under
# testdata/fuzz, fails the smoke run.
set -euo pipefail
fuzztime=${1:-10s}
retry_budget=${FUZZ_RETRY_BUDGET:-300000x}
timeout=${FUZZ_TIMEOUT:-5m}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# deadline_flake LOG: the run failed only with the coordinator's bare deadline
# error and wrote no failing input.
deadline_flake() {
	grep -qE '^[[:space:]]+context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written|panic:|hung or terminated' "$1"
}

run() { # pkg target budget: output goes to $log
	go test -run='^$' -fuzz="^$2\$" -fuzztime="$3" -timeout="$timeout" "$1" >"$log" 2>&1
}

count=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | sort -u || true)
	for t in $targets; do
		echo "fuzz: $pkg $t ($fuzztime)"
		if ! run "$pkg" "$t" "$fuzztime"; then
			if ! deadline_flake "$log"; then
				cat "$log"
				exit 1
			fi
			# Only the progress lines: the bare deadline error is not a test failure.
			grep -E '^fuzz: elapsed' "$log" || true
			echo "fuzz: $t stopped on Go's fuzztime deadline race (go.dev/issue/75804) with no failing input; running it again for $retry_budget executions"
			if ! run "$pkg" "$t" "$retry_budget"; then
				cat "$log"
				exit 1
			fi
		fi
		cat "$log"
		count=$((count + 1))
	done
done
if [ "$count" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: $count targets ran"
