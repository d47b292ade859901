#!/usr/bin/env bash
# Cross-compiles the pure-Go packages and tools with CGO off for the platforms
# where engineers run them (the E2 field study ran on Windows on ARM64).
set -euo pipefail
pkgs=()
for p in ./latency/... ./throughput/... ./ethtool/... ./srd/... ./examples/pingpong ./examples/iperf3 ./examples/enastat ./examples/srdcheck; do
	[ -e "${p%/...}" ] && pkgs+=("$p")
done
[ ${#pkgs[@]} -eq 0 ] && exit 0
for target in windows/arm64 windows/amd64 darwin/arm64 linux/arm64 linux/amd64; do
	echo "cross: $target"
	CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build "${pkgs[@]}"
done
