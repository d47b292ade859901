#!/usr/bin/env bash
# Installs the real peers that netperfkit's integration tests run against, when
# they are missing: iperf3, sockperf, redis-server/redis-cli/redis-benchmark,
# ethtool, iproute2, tcpdump (the path lab's ping-pong referee), prometheus (the
# agent's test scrapes with it) and chromium (examples/report's test renders
# report.html in it). As root
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
have tcpdump || need+=(tcpdump)
have prometheus || need+=(prometheus)
# scripts/anchors' node_exporter anchor scrapes it beside the agent.
have prometheus-node-exporter || need+=(prometheus-node-exporter)
# examples/agent's fleet test serves the peers' DNS name with dnsmasq.
have dnsmasq || need+=(dnsmasq)
# throughput's loss-ledger lab drops on its middle hop with an nft rule.
have nft || need+=(nftables)
# examples/agent's /metrics test (issue 41) makes the basic-auth bcrypt hash
# with htpasswd and scrapes with curl.
have htpasswd || need+=(apache2-utils)
have curl || need+=(curl)
# examples/report's test renders report.html in headless Chromium.
{ have chromium || have chromium-browser; } || need+=(chromium)

# The current iperf3 and valkey releases are built from ../shared/peers (when the
# sources are there) into ~/.cache/netperfkit-peers, where the tests look for them.
peers=$(cd "$(dirname "$0")/.." && pwd)/../shared/peers
if [ -x "$peers/build.sh" ]; then
	have gcc && have make && have pkg-config && [ -e /usr/include/openssl/ssl.h ] ||
		need+=(build-essential libssl-dev pkg-config)
fi

if [ ${#need[@]} -gt 0 ]; then
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
	# Debian starts redis-server, prometheus and dnsmasq as services on install; the tests
	# start their own.
	if command -v systemctl >/dev/null 2>&1; then
		systemctl stop redis-server >/dev/null 2>&1 || true
		systemctl stop prometheus >/dev/null 2>&1 || true
		systemctl stop dnsmasq >/dev/null 2>&1 || true
		systemctl stop prometheus-node-exporter >/dev/null 2>&1 || true
	fi
fi

if [ -x "$peers/build.sh" ]; then
	echo "netperfkit: building iperf3 3.21 and valkey 8.0.1 from $peers (once; about 3 minutes)" >&2
	"$peers/build.sh" all >&2
fi

# AWS's IMDS emulator, for runinfo's EC2 test (a Go module, built once).
mock=$HOME/.cache/netperfkit-peers/ec2-metadata-mock/bin
if [ ! -x "$mock/ec2-metadata-mock" ] && ! have ec2-metadata-mock && have go; then
	echo "netperfkit: building amazon-ec2-metadata-mock v1.13.0 into $mock" >&2
	GOBIN=$mock go install github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@v1.13.0 ||
		echo "netperfkit: could not build amazon-ec2-metadata-mock; runinfo's EC2 test will skip (or fail with NETPERFKIT_REQUIRE_PEERS=1)" >&2
fi
