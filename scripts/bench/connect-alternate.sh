#!/bin/bash
# Issue 42: connect-per-op against redis-benchmark as a user would run the
# pair by hand, on ONE redis-server: `cachebench -engine resp -mode connect
# -workers 4` and `redis-benchmark -k 0 -c 4 -t get,set -d 100 -r 10000`,
# alternated, ROUNDS rounds (default 6). Prints a line per run, "ROUND TOOL OPS/S
# TIME_WAIT-BEFORE TIME_WAIT-AFTER" (redis-benchmark's rate: the harmonic mean
# of its GET and SET rates, as a 1:1 mix of the two; TIME_WAIT: the sockets
# towards the server), and the median of the rounds' ratios, cachebench over
# redis-benchmark. scripts/anchors' redis-benchmark-by-hand anchor runs it.
#
# Every run makes the same number of connections, 2*N (N GETs and N SETs
# for redis-benchmark, -n 2N for cachebench), after a PAUSE (2 s) with no
# connects: on loopback connect(2) searches the ephemeral range past the
# ports still in TIME_WAIT, so a run that makes more connections, or starts
# right after another, pays a longer search per connect (issue 31). A run
# sized by duration would give the faster tool the dearer connects.
# SIZE=time sizes cachebench by -d SECS instead, to show that.
# N defaults to what redis-benchmark makes in about SECS (3) seconds,
# from a discarded first run.
# usage: [ROUNDS=6] [SECS=3] [N=...] [PAUSE=2] [SIZE=ops|time] [REDIS=redis-server]
#        scripts/bench/connect-alternate.sh
set -eu
cd "$(dirname "$0")/../.."
. scripts/bench/lib.sh
ROUNDS=${ROUNDS:-6}; SECS=${SECS:-3}; PAUSE=${PAUSE:-2}; SIZE=${SIZE:-ops}
REDIS=${REDIS:-redis-server}
go build -o /tmp/np-ca-cachebench ./examples/cachebench
start_redis "$REDIS"
trap 'kill $RS 2>/dev/null' EXIT

# rb N: redis-benchmark's ops/s over N GETs and N SETs.
rb() {
	redis-benchmark -h 127.0.0.1 -p "$RP" -k 0 -c 4 -n "$1" -d 100 -r 10000 -t get,set --csv 2>/dev/null |
		awk -F'"' '$2 == "GET" {g = $4} $2 == "SET" {s = $4} END {if (g > 0 && s > 0) printf "%.0f\n", 2 / (1 / g + 1 / s); else exit 1}'
}

# cb N: cachebench's ops/s over 2N operations (SIZE=ops) or SECS seconds.
cb() {
	local size=(-n "$((2 * $1))" -d 60s)
	[ "$SIZE" = time ] && size=(-d "${SECS}s")
	/tmp/np-ca-cachebench -addr "127.0.0.1:$RP" -engine resp -mode connect -workers 4 "${size[@]}" -runs 1 -json 2>/dev/null |
		python3 -c 'import json, sys; print("%.0f" % json.load(sys.stdin)["results"][0]["ops_per_sec"]["median"])'
}

timewait() { ss -Htan state time-wait "( dport = :$RP )" | wc -l; }

if [ -z "${N:-}" ]; then
	sleep "$PAUSE"
	N=$(python3 -c "print(max(1000, int($(rb 10000) * $SECS / 2)))")
fi
echo "# N=$N GETs and SETs a run ($((2 * N)) connections), SIZE=$SIZE, PAUSE=${PAUSE}s"
ratios=()
for r in $(seq "$ROUNDS"); do
	echo "# round $r load $(cut -d' ' -f1 /proc/loadavg)"
	for tool in $(in_turn "$r" cachebench redis-benchmark); do
		sleep "$PAUSE"
		tw=$(timewait)
		case $tool in
		cachebench) c=$(cb "$N") ops=$c ;;
		redis-benchmark) b=$(rb "$N") ops=$b ;;
		esac
		echo "$r $tool $ops $tw $(timewait)"
	done
	ratios+=("$(python3 -c "print('%.3f' % ($c / $b))")")
	echo "# round $r ratio ${ratios[-1]}"
done
python3 - "${ratios[@]}" <<'EOF'
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print("cachebench/redis-benchmark ops/s: median %.3fx [%.3f-%.3f] over %d rounds" % (statistics.median(r), r[0], r[-1], len(r)))
EOF
