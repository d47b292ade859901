#!/bin/bash
# Loss: the stock client vs ours against one stock server SBIN, -u -b RATE -l 1400 -t 3,
# alternating 3 rounds. usage: udp-loss.sh SBIN RATE  (our side: lib.sh)
. "$(dirname "$0")/lib.sh"
SBIN=$1; RATE=$2
start_server "$SBIN"
for r in 1 2 3; do
for tool in stock ours; do
  if [ $tool = ours ]; then B=$NP3; else B=$SBIN; fi
  client_json $B -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 3 -J | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']
print('round %d %-5s loss %.2f%%  %.2f Gbit/s received, jitter %.4f ms' % ($r, '$tool', s['lost_percent'], s['bits_per_second']*(1-s['lost_percent']/100)/1e9, s['jitter_ms']))"
  sleep 0.5
done; done
