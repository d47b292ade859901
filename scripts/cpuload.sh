#!/usr/bin/env bash
# Runs a command with a busy loop on every core, to shake out timing flakes:
#   scripts/cpuload.sh go test -race -count=5 ./cache/... ./throughput/...
# The busy loops end with the command (or after 2 hours at most), and the
# command's exit status is returned.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 command [args...]" >&2; exit 2; }
pids=()
for _ in $(seq "$(nproc 2>/dev/null || echo 2)"); do
	timeout 7200 sh -c 'while :; do :; done' &
	pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
echo "cpuload: ${#pids[@]} busy loops running" >&2
"$@"
