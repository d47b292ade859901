#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
# 3.21 client at -u -b RATE -l 1400 into our server vs into 3.21's server, alternating
I3=${IPERF3_321:-$HOME/.cache/netperfkit-peers/iperf-3.21/bin/iperf3}
RATE=${1:-1G}; shift
P1=$(shuf -i 30000-35000 -n1); P2=$(shuf -i 35001-40000 -n1)
${NP3:-/tmp/np3} -s -p $P1 >/dev/null 2>&1 &
S1=$!
$I3 -s -p $P2 >/dev/null 2>&1 &
S2=$!
sleep 0.5
for r in 1 2 3; do
  for srv in ours 3.21; do
    if [ $srv = ours ]; then P=$P1; else P=$P2; fi
    for try in 1 2 3 4 5; do
      out=$($I3 -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 3 -J "$@" 2>&1)
      echo "$out" | grep -q '"error"' || break
      sleep 0.3
    done
    echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']
print('%s server round %d: jitter %.4f ms, loss %.2f%%, %.2f Gbit/s' % ('$srv', $r, s['jitter_ms'], s['lost_percent'], d['end']['sum_received']['bits_per_second']/1e9 if 'sum_received' in d['end'] else s['bits_per_second']/1e9))"
    sleep 0.3
  done
done
kill $S1 $S2
