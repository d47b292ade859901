#!/bin/bash
# Unlimited UDP, each tool against its own server: ours -u -b 0 -l 1400, 3.21 the same
# with --gsro; 3 alternated rounds of 3 s.  (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
start_servers "$I3"
for r in 1 2 3; do
for tool in ours 3.21; do
  if [ $tool = ours ]; then out=$(client_json $NP3 -c 127.0.0.1 -p $P1 -u -b 0 -l 1400 -t 3 -J); else out=$(client_json $I3 -c 127.0.0.1 -p $P2 -u -b 0 -l 1400 -t 3 --gsro -J); fi
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; c=d['end']['cpu_utilization_percent']
g=s['bits_per_second']*(1-s['lost_percent']/100)/1e9
print('round %d %-5s sent %.2f Gbit/s, loss %.2f%%, goodput %.2f Gbit/s, cpu client %.0f%% server %.0f%%' % ($r, '$tool', s['bits_per_second']/1e9, s['lost_percent'], g, c['host_total'], c['remote_total']))"
  sleep 0.5
done; done
