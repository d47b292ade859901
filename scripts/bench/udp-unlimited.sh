#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
I3=${IPERF3_321:-$HOME/.cache/netperfkit-peers/iperf-3.21/bin/iperf3}
P1=$(shuf -i 30000-35000 -n1); P2=$(shuf -i 35001-40000 -n1)
${NP3:-/tmp/np3} -s -p $P1 >/dev/null 2>&1 & S1=$!
$I3 -s -p $P2 >/dev/null 2>&1 & S2=$!
sleep 0.5
for r in 1 2 3; do
for tool in ours 3.21; do
  if [ $tool = ours ]; then out=$(${NP3:-/tmp/np3} -c 127.0.0.1 -p $P1 -u -b 0 -l 1400 -t 3 -J); else out=$($I3 -c 127.0.0.1 -p $P2 -u -b 0 -l 1400 -t 3 --gsro -J); fi
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; c=d['end']['cpu_utilization_percent']
g=s['bits_per_second']*(1-s['lost_percent']/100)/1e9
print('round %d %-5s sent %.2f Gbit/s, loss %.2f%%, goodput %.2f Gbit/s, cpu client %.0f%% server %.0f%%' % ($r, '$tool', s['bits_per_second']/1e9, s['lost_percent'], g, c['host_total'], c['remote_total']))"
  sleep 0.5
done; done
kill $S1 $S2
