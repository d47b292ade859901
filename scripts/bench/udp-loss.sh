#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
# loss: stock client vs ours (examples/iperf3) against one stock server SBIN, -u -b RATE -l 1400 -t 3, alternating 3 rounds
SBIN=$1; RATE=$2
P=$(shuf -i 30000-40000 -n1)
$SBIN -s -p $P >/dev/null 2>&1 & S=$!
sleep 0.5
for r in 1 2 3; do
for tool in stock ours; do
  if [ $tool = ours ]; then B=${NP3:-/tmp/np3}; else B=$SBIN; fi
  for try in 1 2 3 4 5; do out=$($B -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 3 -J 2>&1); echo "$out" | grep -q '"error"' || break; sleep 0.5; done
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']
print('round %d %-5s loss %.2f%%  %.2f Gbit/s received, jitter %.4f ms' % ($r, '$tool', s['lost_percent'], s['bits_per_second']*(1-s['lost_percent']/100)/1e9, s['jitter_ms']))"
  sleep 0.5
done; done
kill $S
