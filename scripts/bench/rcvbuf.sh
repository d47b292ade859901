#!/bin/bash
# What the kernel holds for each server's data sockets mid-run: a stock client
# into our server and into its own, alternating; 1.5 s into each 3 s run, `ss -tmi`
# gives each stream's receive buffer (skmem rb) and receiver RTT estimate (rcv_rtt, ms).
# usage: [ROUNDS=5] rcvbuf.sh BIN [client args]  (our side: lib.sh)
. "$(dirname "$0")/lib.sh"
B=$1; shift
start_servers "$B"
for r in $(seq "${ROUNDS:-5}"); do
 for which in ours stock; do
  if [ $which = ours ]; then P=$P1; else P=$P2; fi
  out=$(mktemp)
  "$B" -c 127.0.0.1 -p "$P" -t 3 "$@" > "$out" 2>&1 &
  sleep 1.5
  info=$(ss -tmi "sport = :$P")
  rb=$(echo "$info" | grep -o "rb[0-9]*" | sed 's/rb//' | awk '$1>200000{printf "%.1fM ", $1/1048576}')
  rtt=$(echo "$info" | grep -o "rcv_rtt:[0-9.]*" | sed 's/rcv_rtt://' | tr '\n' ' ')
  wait $!
  g=$(grep -E "SUM.*receiver|^\[ *[0-9]+\].*receiver" "$out" | tail -1 | awk '{print $(NF-2)}')
  rm -f "$out"
  echo "round $r $which: $g Gbit/s; rb: $rb; rcv_rtt: $rtt"
  sleep 0.5
 done
done
