#!/bin/bash
# One scrape of an interface's ethtool statistics: node_exporter with only its
# ethtool collector vs examples/agent's /metrics with every probe and server
# off (its ethtool collector, ethtool/ethtoolprom, reads live at each scrape),
# the same interface, alternating in every round (even rounds scrape
# node_exporter first). Each run is N scrapes over
# one keep-alive connection, asking for gzip as Prometheus does; it prints the
# median and p99 scrape latency (us, client side) and the exporter's CPU per
# scrape (us, /proc utime+stime over the run, 10 ms ticks). Both answers also
# carry the Go runtime and process metrics each exporter serves by default.
# usage: [ROUNDS=5] [N=1000] [IFACE=default-route interface] node-exporter.sh
#   AGENT:         go build -o /tmp/agent ./examples/agent
#   NODE_EXPORTER: default prometheus-node-exporter (Debian's package)
. "$(dirname "$0")/lib.sh"
AGENT=${AGENT:-/tmp/agent}; NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
IFACE=${IFACE:-$(ip route show default | awk '{print $5; exit}')}
N=${N:-1000}
p1=$(shuf -i 24000-25000 -n1); p2=$((p1 + 1000)) # below the ephemeral ports
"$AGENT" -metrics 127.0.0.1:$p1 -iface "$IFACE" -iperf3-port 0 -sockperf-port 0 \
	-rtt-every 0 -tput-every 0 >/dev/null 2>&1 & A=$!
"$NODE_EXPORTER" --web.listen-address=127.0.0.1:$p2 --collector.disable-defaults \
	--collector.ethtool --collector.ethtool.device-include="^$IFACE\$" >/dev/null 2>&1 & E=$!
TMPDIR_=$(mktemp -d)
trap 'kill $A $E 2>/dev/null; rm -rf "$TMPDIR_"' EXIT
sleep 1
declare -A pid=([agent]=$A [node_exporter]=$E) port=([agent]=$p1 [node_exporter]=$p2)
for name in agent node_exporter; do # the stats each one serves, and its idle CPU
	n=$(curl -sf 127.0.0.1:${port[$name]}/metrics | grep -c '^node_ethtool_') || { echo "$name: no /metrics"; exit 1; }
	c0=$(cpu_ticks ${pid[$name]}); sleep 2; c1=$(cpu_ticks ${pid[$name]})
	echo "# $name on $IFACE: $n node_ethtool_ series; idle CPU $((c1 - c0)) ticks in 2 s"
done
# The names agree when both serve the same node_ethtool_ series (metric name
# and labels, values apart): "# names agent A node_exporter E common C", then
# one "# only NAME SERIES" line per series that one of them lacks.
series() { curl -sf "127.0.0.1:$1/metrics" | grep '^node_ethtool_' | sed 's/ [^ ]*$//' | sort -u; }
series $p1 >"$TMPDIR_/agent.names"; series $p2 >"$TMPDIR_/node_exporter.names"
echo "# names agent $(wc -l <"$TMPDIR_/agent.names") node_exporter $(wc -l <"$TMPDIR_/node_exporter.names")" \
	"common $(comm -12 "$TMPDIR_/agent.names" "$TMPDIR_/node_exporter.names" | wc -l)"
comm -23 "$TMPDIR_/agent.names" "$TMPDIR_/node_exporter.names" | sed 's/^/# only agent /'
comm -13 "$TMPDIR_/agent.names" "$TMPDIR_/node_exporter.names" | sed 's/^/# only node_exporter /'
scrape() { python3 -c '
import gzip, http.client, statistics, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
hdr = {"Accept-Encoding": "gzip", "Accept": "text/plain;version=0.0.4"}
lat = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    c.request("GET", "/metrics", headers=hdr)
    r = c.getresponse(); body = r.read()
    lat.append(time.perf_counter() - t0)
    assert r.status == 200, r.status
assert b"node_ethtool_" in gzip.decompress(body)
lat.sort()
print("%.1f %.1f" % (statistics.median(lat) * 1e6, lat[int(0.99 * (len(lat) - 1))] * 1e6))' "$@"; }
out=$(mktemp)
for r in $(seq "${ROUNDS:-5}"); do
 for name in $(in_turn "$r" agent node_exporter); do
  c0=$(cpu_ticks ${pid[$name]})
  lat=$(scrape ${port[$name]} "$N") || lat="failed"
  c1=$(cpu_ticks ${pid[$name]})
  echo "$r $name $lat $(( (c1 - c0) * 10000 / N ))"
  sleep 0.2
 done
done | tee "$out"
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)  # round -> name -> (p50, p99, CPU us per scrape)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5:
        runs[f[0]][f[1]] = tuple(map(float, f[2:]))
both = [v for v in runs.values() if len(v) == 2]
med = statistics.median
def ratio(i):
    return [v["agent"][i] / v["node_exporter"][i] for v in both if v["node_exporter"][i] > 0]
for name in ("agent", "node_exporter"):
    print(f"{name}: median scrape p50 {med(v[name][0] for v in both):.0f} us, "
          f"p99 {med(v[name][1] for v in both):.0f} us, CPU {med(v[name][2] for v in both):.0f} us per scrape")
print(f"{len(both)} rounds, agent/node_exporter per round: latency p50 {med(ratio(0)):.2f}x "
      f"({' '.join(f'{x:.2f}' for x in ratio(0))}), p99 {med(ratio(1)):.2f}x, "
      f"CPU per scrape {med(ratio(2)):.2f}x ({' '.join(f'{x:.2f}' for x in ratio(2))})")
PY
rm -f "$out"
