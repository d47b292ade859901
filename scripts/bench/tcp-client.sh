#!/bin/bash
# Alternate our client and 3.21's against one 3.21 server; print Gbit/s sent and client CPU.
# usage: tcp-client.sh [client args]  (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
start_server "$I3"
for r in 1 2 3 4 5; do
  for tool in ours 3.21; do
    if [ $tool = ours ]; then B=$NP3; else B=$I3; fi
    client_json $B -c 127.0.0.1 -p $P -t 3 -J "$@" | python3 -c "
import json,sys
d=json.load(sys.stdin); e=d['end']
print('%s round %d: %.2f Gbit/s recv, client cpu %.1f%% (%.2f %%/Gbps), server cpu %.1f%%' % ('$tool', $r, e['sum_received']['bits_per_second']/1e9, e['cpu_utilization_percent']['host_total'], e['cpu_utilization_percent']['host_total']/(e['sum_received']['bits_per_second']/1e9), e['cpu_utilization_percent']['remote_total']))"
    sleep 0.3
  done
done
