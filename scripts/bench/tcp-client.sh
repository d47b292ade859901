#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
# alternate our client and 3.21's against one 3.21 server; print Gbit/s sent and client CPU
I3=${IPERF3_321:-$HOME/.cache/netperfkit-peers/iperf-3.21/bin/iperf3}
P=$(shuf -i 30000-40000 -n1)
$I3 -s -p $P >/dev/null 2>&1 &
SP=$!
sleep 0.5
ARGS="$@"
for r in 1 2 3 4 5; do
  for tool in ours 3.21; do
    if [ $tool = ours ]; then B=${NP3:-/tmp/np3}; else B=$I3; fi
    for try in 1 2 3 4 5; do
      out=$($B -c 127.0.0.1 -p $P -t 3 -J $ARGS 2>&1)
      echo "$out" | grep -q '"error"' || break
      sleep 0.3
    done
    echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); e=d['end']
print('%s round %d: %.2f Gbit/s recv, client cpu %.1f%% (%.2f %%/Gbps), server cpu %.1f%%' % ('$tool', $r, e['sum_received']['bits_per_second']/1e9, e['cpu_utilization_percent']['host_total'], e['cpu_utilization_percent']['host_total']/(e['sum_received']['bits_per_second']/1e9), e['cpu_utilization_percent']['remote_total']))"
    sleep 0.3
  done
done
kill $SP
