#!/bin/bash
# 3.21 client into our server and into 3.21's, alternating; each run captured on lo
# and its jitter recomputed from the capture by scripts/wirejitter ($WIREJITTER,
# default /tmp/wirejitter). Needs tcpdump. usage: jitter-wire.sh [RATE]  (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
RATE=${1:-1G}
start_servers "$I3"
for r in 1 2 3; do
for srv in ours 3.21; do
  if [ $srv = ours ]; then P=$P1; else P=$P2; fi
  tcpdump -i lo -s 96 -B 262144 --time-stamp-precision nano -w /tmp/j.pcap "udp and dst port $P" >/dev/null 2>&1 & TD=$!
  sleep 0.5
  rep=$(client_json "$I3" -c 127.0.0.1 -p $P -u -b $RATE -l 1400 -t 2 -J | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; print('reports %.4f ms (loss %.2f%%)' % (s['jitter_ms'], s['lost_percent']))")
  sleep 0.3; kill $TD; wait $TD 2>/dev/null
  echo "round $r, $srv server: $rep; wire: $(${WIREJITTER:-/tmp/wirejitter} /tmp/j.pcap)"
done
done
