#!/bin/bash
# A stock client (defaults, TCP) into our server vs into its own server, alternating.
# usage: [SERVER_CPUS=1 CLIENT_CPUS=0] server-vs-stock.sh BIN [client args]  (our side: lib.sh)
# SERVER_CPUS and CLIENT_CPUS pin both servers and the client (taskset -c), so that
# each server gets the same CPU whatever its thread count.
. "$(dirname "$0")/lib.sh"
B=$1; shift
ST=${SERVER_CPUS:+taskset -c $SERVER_CPUS}; CT=${CLIENT_CPUS:+taskset -c $CLIENT_CPUS}
start_servers "$B" $ST
for r in 1 2 3 4 5; do
for srv in ours stock; do
  if [ $srv = ours ]; then P=$P1; else P=$P2; fi
  client_json $CT $B -c 127.0.0.1 -p $P -t 3 -J "$@" | python3 -c "
import json,sys
d=json.load(sys.stdin); e=d['end']; g=e['sum_received']['bits_per_second']/1e9; c=e['cpu_utilization_percent']
print('round %d %s server: %.2f Gbit/s, server cpu %.1f%% = %.2f %%/Gbps, client cpu %.1f%%' % ($r, '$srv', g, c['remote_total'], c['remote_total']/g, c['host_total']))"
  sleep 0.3
done
done
