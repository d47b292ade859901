#!/bin/bash
# Counts context switches, CPU migrations and CPU time of our server and of a stock
# server while a stock client sends to each (2 s mid-run, alternating, 2 rounds).
# Needs perf. usage: server-perf.sh BIN [client args], for example:
# server-perf.sh ~/.cache/netperfkit-peers/iperf-3.21/bin/iperf3 -P 4  (our side: lib.sh)
. "$(dirname "$0")/lib.sh"
B=$1; shift
start_servers "$B"
out=$(mktemp)
for r in 1 2; do
 for which in ours stock; do
  if [ $which = ours ]; then P=$P1; PID=$S1; else P=$P2; PID=$S2; fi
  echo "== round $r, $which server"
  $B -c 127.0.0.1 -p $P -t 3 "$@" > "$out" 2>&1 &
  C=$!
  sleep 0.5
  perf stat -e context-switches,cpu-migrations,task-clock -p $PID -- sleep 2 2>&1 | grep -E "context|migrations|task-clock"
  wait $C
  grep -E "SUM.*receiver|^\[ *[0-9]+\].*receiver" "$out" | tail -1
  sleep 0.5
 done
done
rm -f "$out"
