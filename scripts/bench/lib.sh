# Sourced by the drivers in this folder: the binaries, the servers and a
# retrying client run that every one of them needs.
#   NP3               our side: examples/iperf3 (go build -o /tmp/np3 ./examples/iperf3)
#   NETPERFKIT_IPERF3 iperf3 3.21 (the tests' variable; default: shared/peers/build.sh's output)
NP3=${NP3:-/tmp/np3}
I3=${NETPERFKIT_IPERF3:-$HOME/.cache/netperfkit-peers/iperf-3.21/bin/iperf3}

# start_servers STOCK [PREFIX...]: our server on $P1 (pid $S1) and STOCK's on $P2
# (pid $S2), each run under PREFIX (taskset, say); both are killed on exit.
start_servers() {
	local stock=$1; shift
	P1=$(shuf -i 30000-31000 -n1); P2=$(shuf -i 31001-32000 -n1) # below the ephemeral ports
	"$@" "$NP3" -s -p "$P1" >/dev/null 2>&1 & S1=$!
	"$@" "$stock" -s -p "$P2" >/dev/null 2>&1 & S2=$!
	trap 'kill $S1 $S2 2>/dev/null' EXIT
	sleep 0.5
}

# start_server BIN: one server on $P (pid $S), killed on exit.
start_server() {
	P=$(shuf -i 30000-32000 -n1) # below the ephemeral ports
	"$1" -s -p "$P" >/dev/null 2>&1 & S=$!
	trap 'kill $S 2>/dev/null' EXIT
	sleep 0.5
}

# start_redis [BIN]: a redis-server (or BIN) on $RP (pid $RS), below the
# ephemeral ports, which clients hold. A loaded machine may take seconds to
# start it: it waits up to 30 s for an answer and stops the script if none
# comes (a run against no server measures nothing). The caller kills $RS.
start_redis() {
	local bin=${1:-redis-server} i
	RP=$(shuf -i 28001-29000 -n1)
	"$bin" --port "$RP" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 & RS=$!
	for i in $(seq 300); do
		redis-cli -p "$RP" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	kill "$RS" 2>/dev/null
	echo "$(basename "$0"): $bin on port $RP never answered" >&2
	exit 1
}

# client_json CMD...: runs a -J client, again up to 4 times while the server
# is still busy with the previous test, and prints its document.
client_json() {
	local out try
	for try in 1 2 3 4 5; do
		out=$("$@" 2>&1)
		echo "$out" | grep -q '"error"' || break
		sleep 0.3
	done
	echo "$out"
}

# in_turn ROUND ITEM...: the items in their order in odd rounds and reversed
# in even ones, so that no tool always runs right after the other (a run that
# follows another reads slower on a shared machine: issue 31, issue 40).
in_turn() {
	local r=$1; shift
	if [ $((r % 2)) = 1 ]; then echo "$@"; else echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

# cpu_ticks PID: the process's user+system CPU so far, in clock ticks
# (getconf CLK_TCK, 100 here), from /proc/PID/stat.
cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat"
}
