#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
# a stock client (defaults, TCP) into our server vs into its own server, alternating
# usage: [SERVER_CPUS=1 CLIENT_CPUS=0] server-vs-stock.sh BIN [client args]
# SERVER_CPUS and CLIENT_CPUS pin both servers and the client (taskset -c), so that
# each server gets the same CPU whatever its thread count.
B=$1; shift
ST=${SERVER_CPUS:+taskset -c $SERVER_CPUS}; CT=${CLIENT_CPUS:+taskset -c $CLIENT_CPUS}
P1=$(shuf -i 30000-35000 -n1); P2=$(shuf -i 35001-40000 -n1)
$ST ${NP3:-/tmp/np3} -s -p $P1 >/dev/null 2>&1 & S1=$!
$ST $B -s -p $P2 >/dev/null 2>&1 & S2=$!
sleep 0.5
for r in 1 2 3 4 5; do
for srv in ours stock; do
  if [ $srv = ours ]; then P=$P1; else P=$P2; fi
  for try in 1 2 3 4 5; do
    out=$($CT $B -c 127.0.0.1 -p $P -t 3 -J "$@" 2>&1)
    echo "$out" | grep -q '"error"' || break
    sleep 0.3
  done
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); e=d['end']; g=e['sum_received']['bits_per_second']/1e9; c=e['cpu_utilization_percent']
print('round %d %s server: %.2f Gbit/s, server cpu %.1f%% = %.2f %%/Gbps, client cpu %.1f%%' % ($r, '$srv', g, c['remote_total'], c['remote_total']/g, c['host_total']))"
  sleep 0.3
done
done
kill $S1 $S2
