#!/bin/bash
# Our side is examples/iperf3 built to $NP3 (default /tmp/np3: go build -o /tmp/np3 ./examples/iperf3).
# 3.21 client into our server and into 3.21's, alternating; each run captured on lo
I3=${IPERF3_321:-$HOME/.cache/netperfkit-peers/iperf-3.21/bin/iperf3}
RATE=${1:-1G}
P1=$(shuf -i 30000-35000 -n1); P2=$(shuf -i 35001-40000 -n1)
${NP3:-/tmp/np3} -s -p $P1 >/dev/null 2>&1 & S1=$!
$I3 -s -p $P2 >/dev/null 2>&1 & S2=$!
sleep 0.5
for r in 1 2 3; do
for srv in ours 3.21; do
  if [ $srv = ours ]; then P=$P1; else P=$P2; fi
  tcpdump -i lo -s 96 -B 262144 --time-stamp-precision nano -w /tmp/j.pcap "udp and dst port $P" >/dev/null 2>&1 & TD=$!
  sleep 0.5
  rep=$($I3 -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 2 -J | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; print('reports %.4f ms (loss %.2f%%)' % (s['jitter_ms'], s['lost_percent']))")
  sleep 0.3; kill $TD; wait $TD 2>/dev/null
  echo "round $r, $srv server: $rep; wire: $(${WIREJITTER:-/tmp/wirejitter} /tmp/j.pcap)"
done
done
kill $S1 $S2
