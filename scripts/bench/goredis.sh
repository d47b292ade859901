#!/bin/bash
# go-redis v9 (scripts/bench/goredis, its own module) vs our RESP engine
# (examples/cachebench -engine resp -mode pool), closed-loop GETs of 10,000
# filled keys against one redis-server, alternating in every round, with 1 and
# with 4 workers (one pooled connection each). Each run prints ops/s, p50 and
# p99 (us) and the client's CPU (user+system seconds); the summary is the
# median over rounds of ours/go-redis per round. Even rounds run ours first.
# usage: [ROUNDS=5] [SECONDS_=2] [WORKERS="1 4"] goredis.sh
#   CACHEBENCH: go build -o /tmp/cachebench ./examples/cachebench
#   GOREDIS:    (cd scripts/bench/goredis && go build -o /tmp/goredis .)
. "$(dirname "$0")/lib.sh"
CACHEBENCH=${CACHEBENCH:-/tmp/cachebench}; GOREDIS=${GOREDIS:-/tmp/goredis}
T=${SECONDS_:-2}
RP=$(shuf -i 26000-28000 -n1) # below the ephemeral ports, which clients hold
redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no >"${LOG:-/dev/null}" 2>&1 & R=$!
trap 'kill $R 2>/dev/null' EXIT
for i in $(seq 300); do redis-cli -p "$RP" ping >/dev/null 2>&1 && break; sleep 0.1; done # up to 30 s on a loaded machine
"$GOREDIS" -addr 127.0.0.1:$RP -fill -d 100ms >/dev/null || exit 1
# cpu CMD...: runs CMD, then prints its stdout on one line and the CPU it used.
cpu() { python3 -c '
import resource, subprocess, sys
out = " ".join(subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout.split())
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out or "failed", "%.3f" % (r.ru_utime + r.ru_stime))' "$@"; }
out=$(mktemp)
for r in $(seq "${ROUNDS:-5}"); do
 for w in ${WORKERS:-1 4}; do
  for tool in $(in_turn "$r" go-redis resp); do
   if [ $tool = go-redis ]; then
    cpu "$GOREDIS" -addr 127.0.0.1:$RP -workers "$w" -d "${T}s" | awk -v r=$r -v w=$w '{print r, w, "go-redis", $1, $2, $3, $NF}'
   else
    cpu "$CACHEBENCH" -engine resp -mode pool -addr 127.0.0.1:$RP -workers "$w" -d "${T}s" -runs 1 -ratio 1:0 -json |
     python3 -c '
import json, sys
line = sys.stdin.read().rsplit(None, 1)  # the JSON, then the CPU seconds
d = json.loads(line[0])["results"][0]
print("'"$r $w"'", "resp", d["ops_per_sec"]["median"], d["p50_us"]["median"], d["p99_us"]["median"], line[1])'
   fi
   sleep 0.2
  done
 done
done | tee "$out"
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)  # workers -> round -> name -> (ops/s, p50, p99, cpu s)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 7:
        runs[f[1]].setdefault(f[0], {})[f[2]] = tuple(map(float, f[3:]))
med = statistics.median
for w, rounds in runs.items():
    both = [v for v in rounds.values() if "resp" in v and "go-redis" in v]
    def ratio(i):
        return [v["resp"][i] / v["go-redis"][i] for v in both]
    cpu = [(v["resp"][3] / v["resp"][0]) / (v["go-redis"][3] / v["go-redis"][0]) for v in both]
    print(f"{w} workers, {len(both)} rounds: ops/s resp {med(v['resp'][0] for v in both):.0f}, "
          f"go-redis {med(v['go-redis'][0] for v in both):.0f}, ratio {med(ratio(0)):.2f}x "
          f"({' '.join(f'{x:.2f}' for x in ratio(0))}); p50 ratio {med(ratio(1)):.2f}x; "
          f"p99 ratio {med(ratio(2)):.2f}x; client CPU per op {med(cpu):.2f}x")
PY
rm -f "$out"
