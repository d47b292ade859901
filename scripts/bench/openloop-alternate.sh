#!/bin/bash
# Issue 23: our open-loop and ping-pong clients against the plain references,
# alternated, ROUNDS rounds (default 5), each tool against ONE server of each
# kind; prints every run and then the medians of p50 and p99 (microseconds,
# round trips / response times) per tool.
#   redis GET at 1000/s and 5000/s on one connection: redis-openloop.py (the
#     plain reference of issue 31: sleeps to each send, blocks in recv) vs
#     `cachebench -engine resp -mode pool -workers 1 -rate R -kernel=false`
#     (application view against application view), and "cachebench-R-kernel",
#     the same with the kernel view (the default): what its stamps cost
#   UDP under-load at 1000 msg/s: `sockperf under-load --full-rtt` vs `pingpong -mps 1000`
#   UDP ping-pong: `sockperf ping-pong --full-rtt` vs `pingpong`
# Both sockperf and pingpong print full round trips (sockperf's default is half).
# Under-load runs last 3*SECS (one reply in 100: ~10 round trips a second).
# BEFORE=DIR (a checkout of an older commit) adds that commit's cachebench and
# pingpong to every alternation, as "...-before".
# BUSY=1 adds the busy-waiting redis-openloop-busy.py, a labelled second
# reference only ("busy-R"). ONLY=cache skips the sockperf/pingpong part,
# ONLY=underload runs the under-load pair alone, ONLY=pingpong the ping-pong
# pair alone. RATES (default "1000 5000") picks the open-loop rates, KERNEL=0
# leaves out the "-kernel" runs. Even rounds run our tools first.
# Each round starts with a "# round N load L" line (1-minute load average):
# the host is shared, so read the ratios beside it.
# usage: [ROUNDS=5] [SECS=5] [BEFORE=DIR] [BUSY=1] [ONLY=cache|underload|pingpong] [RATES=...] [KERNEL=0]
#        scripts/bench/openloop-alternate.sh
# needs redis-server, sockperf, python3 and go; builds to /tmp/np-ol-*.
set -eu
cd "$(dirname "$0")/../.."
. scripts/bench/lib.sh
# PLAIN: the plain reference (scripts/anchors passes ../shared/reference/plain-openloop.py,
# of which redis-openloop.py is a copy with a longer docstring).
PLAIN=${PLAIN:-scripts/bench/redis-openloop.py}
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-5}; RATES=${RATES:-1000 5000}; ONLY=${ONLY:-}
go build -o /tmp/np-ol-cachebench ./examples/cachebench
go build -o /tmp/np-ol-pingpong ./examples/pingpong
CB=(/tmp/np-ol-cachebench); PP=(/tmp/np-ol-pingpong); TAG=(""); NOKERNEL=(-kernel=false)
if [ -n "${BEFORE:-}" ]; then
	(cd "$BEFORE" && go build -o /tmp/np-ol-cachebench-before ./examples/cachebench && go build -o /tmp/np-ol-pingpong-before ./examples/pingpong)
	CB+=(/tmp/np-ol-cachebench-before); PP+=(/tmp/np-ol-pingpong-before); TAG+=(-before); NOKERNEL+=("")
fi
SP=$(shuf -i 29001-30000 -n1) # below the ephemeral ports, which clients hold
sockperf server -i 127.0.0.1 -p "$SP" >/dev/null 2>&1 & SS=$!
trap 'kill $SS 2>/dev/null' EXIT
start_redis
trap 'kill $RS $SS 2>/dev/null' EXIT
out=$(mktemp)

# sockperf_pcts: "p50 p99" from sockperf's text on stdin.
sockperf_pcts() {
	awk '/percentile 50.000/ {p50=$NF} /percentile 99.000/ {p99=$NF} END {print p50, p99}'
}
cachebench_pcts() {
	python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["p50_us"]["median"], r["p99_us"]["median"], r.get("client_lateness_p99_us",{}).get("median",0), r.get("receive_wake_p99_us",{}).get("median",0), r.get("achieved_rate",{}).get("median",0), r.get("reclassified",0), r.get("service_p99_us",{}).get("median",0))'
}
# host_mark: the host's CPU steal (jiffies of 10 ms, /proc/stat) and CPU
# pressure ("some" total, us; /proc/pressure/cpu), to say after a run how
# much of it the host took away: "# R TOOL steal_ms psi_ms" lines, which the
# medians below skip. A round with steal or pressure is the host's, not the
# tool's.
host_mark() {
	echo "$(awk '/^cpu /{print $9}' /proc/stat) $(awk '/^some/{split($5,a,"="); print a[2]}' /proc/pressure/cpu 2>/dev/null || echo 0)"
}
host_note() { # round tool "before" "after"
	read -r s0 p0 <<<"$3"; read -r s1 p1 <<<"$4"
	echo "# $1 $2 steal_ms $(((s1 - s0) * 10)) psi_ms $(((p1 - p0) / 1000))"
}
# pingpong_pcts [SECONDS]: p50, p99, send lateness p99, receive wake p99 and,
# given the run's seconds, the client's CPU in percent of a core.
pingpong_pcts() {
	python3 -c 'import json,sys; r=json.load(sys.stdin); s=float(sys.argv[1]) if len(sys.argv) > 1 else 0
print(r["p50_us"], r["p99_us"], (r.get("send_lateness") or {}).get("p99_us",0), (r.get("receive_wake") or {}).get("p99_us",0), *([round(100*r.get("cpu_seconds",0)/s, 2)] if s else []))' "$@"
}

# plain_run R RATE, ours_run R RATE, ...: one run each, printing "R TOOL p50 p99 ...".
plain_run() {
	local m; m=$(host_mark)
	echo "$1 plain-$2 $(python3 "$PLAIN" 127.0.0.1 "$RP" "$2" "$SECS" | awk '{print $2, $4}')"
	host_note "$1" "plain-$2" "$m" "$(host_mark)"
	if [ -n "${BUSY:-}" ]; then
		echo "$1 busy-$2 $(python3 scripts/bench/redis-openloop-busy.py 127.0.0.1 "$RP" "$2" "$SECS" | awk '{print $2, $4}')"
	fi
}
ours_run() {
	local i m
	for i in "${!CB[@]}"; do
		m=$(host_mark)
		echo "$1 cachebench-$2${TAG[$i]} $(${CB[$i]} -addr 127.0.0.1:$RP -engine resp -mode pool -workers 1 -rate "$2" -d "${SECS}s" -runs 1 -json ${NOKERNEL[$i]} | cachebench_pcts)"
		host_note "$1" "cachebench-$2${TAG[$i]}" "$m" "$(host_mark)"
	done
	# The default run, with the kernel view: what its transmit stamps
	# cost the application view.
	[ "${KERNEL:-1}" = 0 ] && return
	m=$(host_mark)
	echo "$1 cachebench-$2-kernel $(${CB[0]} -addr 127.0.0.1:$RP -engine resp -mode pool -workers 1 -rate "$2" -d "${SECS}s" -runs 1 -json | cachebench_pcts)"
	host_note "$1" "cachebench-$2-kernel" "$m" "$(host_mark)"
}
sockperf_ul_run() {
	echo "$1 sockperf-ul1000 $(sockperf under-load -i 127.0.0.1 -p "$SP" -t "$((SECS * 3))" --mps=1000 --full-rtt 2>&1 | sockperf_pcts)"
}
pingpong_ul_run() {
	local i
	for i in "${!PP[@]}"; do
		echo "$1 pingpong-ul1000${TAG[$i]} $(${PP[$i]} -addr 127.0.0.1:$SP -t "$((SECS * 3))s" -mps 1000 -json | pingpong_pcts "$((SECS * 3))")"
	done
}
sockperf_pp_run() {
	echo "$1 sockperf-pp $(sockperf ping-pong -i 127.0.0.1 -p "$SP" -t "$SECS" --full-rtt 2>&1 | sockperf_pcts)"
}
pingpong_pp_run() {
	local i
	for i in "${!PP[@]}"; do
		echo "$1 pingpong-pp${TAG[$i]} $(${PP[$i]} -addr 127.0.0.1:$SP -t "${SECS}s" -json ${NOKERNEL[$i]} | pingpong_pcts)"
	done
}

for r in $(seq "$ROUNDS"); do
	echo "# round $r load $(cut -d' ' -f1 /proc/loadavg)"
	if [ -z "$ONLY" ] || [ "$ONLY" = cache ]; then
		for rate in $RATES; do
			for f in $(in_turn "$r" plain_run ours_run); do "$f" "$r" "$rate"; done
		done
	fi
	if [ -z "$ONLY" ] || [ "$ONLY" = underload ]; then
		for f in $(in_turn "$r" sockperf_ul_run pingpong_ul_run); do "$f" "$r"; done
	fi
	if [ -z "$ONLY" ] || [ "$ONLY" = pingpong ]; then
		for f in $(in_turn "$r" sockperf_pp_run pingpong_pp_run); do "$f" "$r"; done
	fi
done | tee "$out"

echo
echo "medians over $ROUNDS rounds (us): tool p50 p99 [client: send-lateness-p99 receive-wake-p99] [cachebench: achieved/s, requests behind own late sends, service-p99]"
python3 - "$out" <<'PY'
import statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[0] != "#":
        rows[f[1]].append([float(x) for x in f[2:]])
for tool, vals in rows.items():
    cols = list(zip(*vals))
    print(tool, " ".join("%.1f" % statistics.median(c) for c in cols))
# Each round's ratio ours/reference, then their median: a round that a
# neighbour's load disturbed moves one ratio, not the whole comparison.
print()
print("median of the rounds' ratios, ours/reference: p50 p99")
pairs = [("cachebench-1000", "plain-1000"), ("cachebench-5000", "plain-5000"),
         ("busy-1000", "plain-1000"), ("busy-5000", "plain-5000"),
         ("pingpong-ul1000", "sockperf-ul1000"), ("pingpong-pp", "sockperf-pp")]
for ours, ref in pairs:
    for tag in sorted({t[len(ours):] for t in rows if t.startswith(ours)}):
        a, b = rows.get(ours + tag), rows.get(ref)
        if not a or not b:
            continue
        r50 = [x[0] / y[0] for x, y in zip(a, b) if y[0] > 0]
        r99 = [x[1] / y[1] for x, y in zip(a, b) if y[1] > 0]
        print("%s/%s %.2fx %.2fx" % (ours + tag, ref, statistics.median(r50), statistics.median(r99)))
PY
rm -f "$out"
