#!/bin/bash
# 3.21 client -u -b RATE(1G) -l 1400 -t 3 into: 3.21's server (a), ours with the kernel clock,
# ours with --jitter-clock read, 3.21's server again (b). PIN=1: servers on CPU 1, client CPU 0.
. "$(dirname "$0")/lib.sh"
if [ "${PIN:-0}" = 1 ]; then SP="taskset -c 1"; CP="taskset -c 0"; else SP=""; CP=""; fi
P3=$(shuf -i 40001-45000 -n1)
$SP "$NP3" -s -p $P3 --jitter-clock read >/dev/null 2>&1 & S3=$!
start_servers "$I3" $SP
trap 'kill $S1 $S2 $S3 2>/dev/null' EXIT
j() { client_json $CP "$I3" -c 127.0.0.1 -p $1 -u -b ${RATE:-1G} -l 1400 -t 3 -J | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; print('%.5f' % s['jitter_ms'])"; sleep 0.3; }
echo "round 3.21a ours-kernel ours-read 3.21b load"
for r in $(seq 1 ${ROUNDS:-6}); do
  a=$(j $P2); k=$(j $P1); d=$(j $P3); b=$(j $P2)
  echo "$r $a $k $d $b $(cut -d' ' -f1 /proc/loadavg)"
done
