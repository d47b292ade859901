#!/bin/bash
# Several clients (-J, TCP) against one stock server, each round in the same
# order; each client's goodput and CPU per byte (its own host_total) as a ratio
# to the stock client's in the same round, and the median of those ratios.
# usage: [ROUNDS=5] [STOCK=BIN] client-variants.sh "NAME=CLIENT CMD" ... -- [client args]
#   STOCK (the server, and the reference client) defaults to iperf3 3.21 (lib.sh).
# example: client-variants.sh "threads=/tmp/np3" "poller=/tmp/np3 --stream-threads=false" -- -l 128K -P 4
# Even rounds take the clients in reverse order (lib.sh's in_turn).
. "$(dirname "$0")/lib.sh"
STOCK=${STOCK:-$I3}
names=(); cmds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("${1%%=*}"); cmds+=("${1#*=}"); shift; done
shift
names+=(stock); cmds+=("$STOCK")
start_server "$STOCK"
out=$(mktemp)
for r in $(seq "${ROUNDS:-5}"); do
 for i in $(in_turn "$r" "${!names[@]}"); do
  client_json ${cmds[$i]} -c 127.0.0.1 -p "$P" -t 3 -J "$@" | python3 -c "
import json,sys
e=json.load(sys.stdin)['end']; g=e['sum_received']['bits_per_second']/1e9; c=e['cpu_utilization_percent']
print('$r ${names[$i]} %.2f %.1f' % (g, c['host_total']))" || echo "$r ${names[$i]} failed"
  sleep 0.3
 done
done | tee "$out"
python3 "$(dirname "$0")/ratios.py" "$out" client
rm -f "$out"
