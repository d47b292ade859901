#!/bin/bash
# Issue 31, part 6: connect storms across a veth to a redis-server in another
# network namespace (198.18.31.2), back to back, then once more after waiting
# for the TIME_WAIT sockets towards it to fall below a quarter of the
# ephemeral port range. cachebench prints each run's TIME_WAIT before -> after,
# the blocked share and "limited by: client ephemeral ports".
# usage (root): [RUNS=3] [SECS=2] scripts/bench/timewait-veth.sh
set -u
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}; SECS=${SECS:-2}
go build -o /tmp/np31-tw-cachebench ./examples/cachebench || exit 1
ip netns add np31tw || exit 1
trap 'ip netns pids np31tw | xargs -r kill; sleep 0.5; ip link del np31twa 2>/dev/null; ip netns del np31tw' EXIT
ip link add np31twa type veth peer name np31twb
ip link set np31twb netns np31tw
ip addr add 198.18.31.1/30 dev np31twa
ip link set np31twa up
ip netns exec np31tw ip addr add 198.18.31.2/30 dev np31twb
ip netns exec np31tw ip link set np31twb up
ip netns exec np31tw ip link set lo up
ip netns exec np31tw redis-server --port 6390 --bind 198.18.31.2 --save '' --appendonly no --protected-mode no >/dev/null 2>&1 &
sleep 1
run() {
	echo "# $1, load $(cut -d' ' -f1 /proc/loadavg)"
	/tmp/np31-tw-cachebench -addr 198.18.31.2:6390 -engine resp -mode connect -workers 4 -d "${SECS}s" -runs 1 2>&1 | grep -E '^cachebench:|->'
}
for i in $(seq "$RUNS"); do
	run "run $i, at once"
done
read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
quarter=$(((hi - lo + 1) / 4))
start=$(date +%s)
until [ "$(ss -Htan state time-wait dst 198.18.31.2 | wc -l)" -le "$quarter" ]; do sleep 1; done
run "after waiting $(($(date +%s) - start)) s for at most $quarter in TIME_WAIT"
