#!/bin/bash
# 3.21 client at -u -b RATE -l 1400 into our server vs into 3.21's server, alternating.
# usage: jitter-servers.sh [RATE [client args]]  (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
RATE=${1:-1G}; shift
start_servers "$I3"
for r in 1 2 3; do
  for srv in ours 3.21; do
    if [ $srv = ours ]; then P=$P1; else P=$P2; fi
    client_json "$I3" -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 3 -J "$@" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']
print('%s server round %d: jitter %.4f ms, loss %.2f%%, %.2f Gbit/s' % ('$srv', $r, s['jitter_ms'], s['lost_percent'], d['end']['sum_received']['bits_per_second']/1e9 if 'sum_received' in d['end'] else s['bits_per_second']/1e9))"
    sleep 0.3
  done
done
