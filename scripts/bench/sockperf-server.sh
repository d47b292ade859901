#!/bin/bash
# A stock sockperf client into our latency server (examples/pingpong -server)
# vs into a stock `sockperf server`, UDP and TCP, 64-byte messages, the servers
# alternated in every round (even rounds ask sockperf's server first). Each run prints sockperf's own p50 and p99 (its
# half round trip, usec), the messages it sent and the server process's CPU
# over the run (microseconds, its threads' /proc schedstat); the summary is
# the median over rounds of ours/theirs per round. Both servers run pinned to
# the last CPU and the client to the first (on one CPU, all share it), so
# that the servers' CPU per message compares like with like.
# usage: [ROUNDS=5] [SECONDS_=3] [MPS=20000] [PROTOS="udp tcp"] sockperf-server.sh
#   PINGPONG: our server (go build -o /tmp/pingpong ./examples/pingpong)
#   MPS: also a `sockperf under-load --mps=MPS` run per server (0: ping-pong only)
. "$(dirname "$0")/lib.sh"
PINGPONG=${PINGPONG:-/tmp/pingpong}
T=${SECONDS_:-3}; MPS=${MPS:-20000}; PROTOS=${PROTOS:-udp tcp}
port=$(shuf -i 20000-24000 -n1) # below the ephemeral ports, which clients hold
last=$(($(nproc) - 1))
srvpin=(taskset -c "$last"); clipin=(taskset -c 0)
# cpu_us PID: the CPU time of PID's threads, in microseconds.
cpu_us() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{t += $1} END {printf "%d", t / 1000}'; }
declare -A ports pids
start() { # start NAME PROTO CMD...: a server on the next port
	local key=$1-$2; shift 2
	"$@" >/dev/null 2>&1 & pids[$key]=$!; ports[$key]=$port; port=$((port+1))
}
for p in $PROTOS; do
	tcpflag=; [ $p = tcp ] && tcpflag=--tcp
	start ours $p "${srvpin[@]}" "$PINGPONG" -server ${tcpflag:+-tcp} -addr 127.0.0.1:$port
	start sockperf $p "${srvpin[@]}" sockperf server -i 127.0.0.1 -p $port $tcpflag
done
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 0.5
for key in "${!pids[@]}"; do # a port another program holds ends a server at once
	kill -0 "${pids[$key]}" 2>/dev/null || { echo "$key: no server on port ${ports[$key]}" >&2; exit 1; }
done
modes=(ping-pong); [ "$MPS" != 0 ] && modes+=(under-load)
out=$(mktemp)
for r in $(seq "${ROUNDS:-5}"); do
 for mode in "${modes[@]}"; do
  for p in $PROTOS; do
   tcpflag=; [ $p = tcp ] && tcpflag=--tcp
   mpsflag=; [ $mode = under-load ] && mpsflag=--mps=$MPS
   for name in $(in_turn "$r" ours sockperf); do
    key=$name-$p; c0=$(cpu_us "${pids[$key]}")
    rep=$("${clipin[@]}" sockperf $mode -i 127.0.0.1 -p "${ports[$key]}" $tcpflag -m 64 -t "$T" $mpsflag 2>&1)
    c1=$(cpu_us "${pids[$key]}")
    echo "$rep" | awk -v r=$r -v m=$mode -v p=$p -v n=$name -v cpu=$((c1-c0)) '
     /\[Total Run\]/ { for (i = 1; i <= NF; i++) if ($i ~ /^SentMessages=/) { split($i, a, "="); sent = a[2] + 0 } }
     /percentile 50.000/ { p50 = $NF } /percentile 99.000/ { p99 = $NF }
     END { if (p50 == "") print r, m, p, n, "failed"; else print r, m, p, n, p50, p99, sent, cpu }'
    sleep 0.2
   done
  done
 done
done | tee "$out"
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)  # (mode, proto) -> round -> name -> (p50, p99, msgs, cpu us)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 8:
        runs[(f[1], f[2])].setdefault(f[0], {})[f[3]] = tuple(map(float, f[4:]))
med = statistics.median
for (mode, proto), rounds in runs.items():
    both = [v for v in rounds.values() if "ours" in v and "sockperf" in v]
    if not both:
        print(f"{mode} {proto}: no round with both servers")
        continue
    def ratio(i):
        return [v["ours"][i] / v["sockperf"][i] for v in both]
    # CPU per message: microseconds over the messages the client sent (under-load:
    # every one reaches the server, one in 100 asks for a reply).
    cpu = [(v["ours"][3] / v["ours"][2]) / (v["sockperf"][3] / v["sockperf"][2])
           for v in both if v["sockperf"][3] > 0 and v["ours"][2] > 0]
    line = " ".join(f"{x:.2f}" for x in ratio(0))
    print(f"{mode} {proto}, {len(both)} rounds: p50 ours {med(v['ours'][0] for v in both):.3f} us, "
          f"sockperf {med(v['sockperf'][0] for v in both):.3f} us, ratio {med(ratio(0)):.2f}x ({line}); "
          f"p99 ratio {med(ratio(1)):.2f}x; messages {med(ratio(2)):.2f}x; "
          f"server CPU per message {med(cpu) if cpu else float('nan'):.2f}x")
PY
rm -f "$out"
