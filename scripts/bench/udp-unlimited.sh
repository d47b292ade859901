#!/bin/bash
# Unlimited UDP, each tool against its own server: ours -u -b 0 -l 1400, 3.21 the same
# with --gsro; $ROUNDS (default 5) alternated rounds of 3 s (even rounds run 3.21
# first), then each tool's medians. CLIENT=3.21 sends from 3.21's client (--gsro) into
# both servers, so that the servers alone differ.
# (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
start_servers "$I3"
rows=$(mktemp); trap 'kill $S1 $S2 2>/dev/null; rm -f $rows' EXIT
for r in $(seq 1 "${ROUNDS:-5}"); do
for tool in $(in_turn "$r" ours 3.21); do
  if [ $tool = ours ] && [ "${CLIENT:-}" = 3.21 ]; then out=$(client_json $I3 -c 127.0.0.1 -p $P1 -u -b 0 -l 1400 -t 3 --gsro -J)
  elif [ $tool = ours ]; then out=$(client_json $NP3 -c 127.0.0.1 -p $P1 -u -b 0 -l 1400 -t 3 -J); else out=$(client_json $I3 -c 127.0.0.1 -p $P2 -u -b 0 -l 1400 -t 3 --gsro -J); fi
  echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['end']['sum']; c=d['end']['cpu_utilization_percent']
g=s['bits_per_second']*(1-s['lost_percent']/100)/1e9
print('round %d %-5s sent %.2f Gbit/s, loss %.2f%%, goodput %.2f Gbit/s, cpu client %.0f%% server %.0f%%' % ($r, '$tool', s['bits_per_second']/1e9, s['lost_percent'], g, c['host_total'], c['remote_total']))" | tee -a "$rows"
  sleep 0.5
done; done
python3 - "$rows" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'round \d+ (\S+)\s+sent ([\d.]+) Gbit/s, loss ([\d.]+)%, goodput ([\d.]+)', line)
    if m:
        rows.setdefault(m[1], []).append(tuple(map(float, m.groups()[1:])))
med = {t: [statistics.median(c) for c in zip(*v)] for t, v in rows.items()}
for t, (s, l, g) in med.items():
    print('median %-5s sent %.2f Gbit/s, loss %.2f%%, goodput %.2f Gbit/s (n=%d)' % (t, s, l, g, len(rows[t])))
if 'ours' in med and '3.21' in med and med['3.21'][2] > 0:
    print('goodput ours/3.21: %.2fx' % (med['ours'][2] / med['3.21'][2]))
PY
