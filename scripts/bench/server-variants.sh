#!/bin/bash
# A stock client (-J, TCP) into several servers in turn, each round in the same
# order; each server's goodput and CPU per byte (the client's remote_total) as a
# ratio to the stock server's in the same round, and the median of those ratios.
# usage: [ROUNDS=5] [CLIENT=BIN] [STOCK=BIN] server-variants.sh "NAME=SERVER CMD" ... -- [client args]
#   CLIENT defaults to iperf3 3.21 (lib.sh), STOCK to CLIENT; each SERVER CMD gets -s -p PORT.
#   SERVER_CPUS and CLIENT_CPUS pin every server and the client (taskset -c), so that
#   each server gets the same CPU whatever its thread count.
# example: server-variants.sh "threads=/tmp/np3" "poller=/tmp/np3 --stream-threads=false" -- -P 4
# Even rounds take the servers in reverse order (lib.sh's in_turn).
. "$(dirname "$0")/lib.sh"
CLIENT=${CLIENT:-$I3}; STOCK=${STOCK:-$CLIENT}
ST=${SERVER_CPUS:+taskset -c $SERVER_CPUS}; CT=${CLIENT_CPUS:+taskset -c $CLIENT_CPUS}
names=(); pids=(); ports=()
port=$(shuf -i 30000-32000 -n1) # below the ephemeral ports, which clients hold
start() { $ST $2 -s -p $port >/dev/null 2>&1 & pids+=($!); names+=("$1"); ports+=($port); port=$((port+1)); }
while [ $# -gt 0 ] && [ "$1" != "--" ]; do start "${1%%=*}" "${1#*=}"; shift; done
shift
start stock "$STOCK"
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp)
for r in $(seq "${ROUNDS:-5}"); do
 for i in $(in_turn "$r" "${!names[@]}"); do
  client_json $CT "$CLIENT" -c 127.0.0.1 -p "${ports[$i]}" -t 3 -J "$@" | python3 -c "
import json,sys
e=json.load(sys.stdin)['end']; g=e['sum_received']['bits_per_second']/1e9; c=e['cpu_utilization_percent']
print('$r ${names[$i]} %.2f %.1f %.1f' % (g, c['remote_total'], c['host_total']))" || echo "$r ${names[$i]} failed"
  sleep 0.3
 done
done | tee "$out"
python3 "$(dirname "$0")/ratios.py" "$out" server
rm -f "$out"
