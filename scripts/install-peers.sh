#!/usr/bin/env bash
# Installs the real peers that netperfkit's integration tests run against, when
# they are missing: iperf3, sockperf, redis-server/redis-cli/redis-benchmark,
# ethtool, iproute2 and prometheus (the agent's test scrapes with it). As root
# it uses apt-get; otherwise it prints what to install and carries on (the
# tests then skip, unless NETPERFKIT_REQUIRE_PEERS=1).
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have iperf3 || need+=(iperf3)
have sockperf || need+=(sockperf)
have redis-server || need+=(redis-server)
{ have redis-cli && have redis-benchmark; } || need+=(redis-tools)
have ethtool || need+=(ethtool)
have ip || need+=(iproute2)
have prometheus || need+=(prometheus)

if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
	echo "netperfkit: integration peers missing: ${need[*]}" >&2
	echo "netperfkit: install them with: sudo apt-get install -y ${need[*]}" >&2
	echo "netperfkit: tests that need them will skip (or fail with NETPERFKIT_REQUIRE_PEERS=1)" >&2
	exit 0
fi
echo "netperfkit: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts redis-server and prometheus as services on install; the tests
# start their own.
if command -v systemctl >/dev/null 2>&1; then
	systemctl stop redis-server >/dev/null 2>&1 || true
	systemctl stop prometheus >/dev/null 2>&1 || true
fi
