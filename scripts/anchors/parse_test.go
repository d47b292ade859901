package main

import (
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs as the scripts and benchmarks print them (one round each, or
// two), with the lines around them that the parsers must leave out.
const (
	clientOut = "1 ours 9.69 17.1\n1 stock 15.79 35.0\n2 stock failed\n2 ours 10.00 20.0\n" +
		"ours: median 9.7 Gbit/s; per round against stock: goodput 0.61x (0.61), client CPU per byte 0.80x\n"
	serverOut = "1 stock 20.00 50.0 30.0\n1 ours 22.00 44.0 31.0\n"
	udpOut    = "round 1 ours  sent 2.40 Gbit/s, loss 0.00%, goodput 2.40 Gbit/s, cpu client 90% server 60%\n" +
		"round 1 3.21  sent 2.10 Gbit/s, loss 0.64%, goodput 2.00 Gbit/s, cpu client 95% server 99%\n" +
		"median ours  sent 2.40 Gbit/s, loss 0.00%, goodput 2.40 Gbit/s (n=1)\n"
	openLoopOut = "# round 1 load 0.41\n1 plain-1000 40.0 80.0\n# 1 plain-1000 steal_ms 0 psi_ms 3\n" +
		"1 cachebench-1000 46.0 88.0 3.1 2.0 999.8 0\n# 1 cachebench-1000 steal_ms 0 psi_ms 1\n" +
		"1 sockperf-ul1000 30.0 60.0\n1 pingpong-ul1000 27.0 54.0 1.0 2.0\n"
	sockperfClientOut = "    compare_test.go:50: round 1: ours p50 20.000 us, sockperf p50 19.000 us, ratio 1.053 (ours: n=1)\n" +
		"    compare_test.go:50: round 2: ours p50 21.000 us, sockperf p50 20.000 us, ratio 1.050 (ours: n=1)\n"
	sockperfServerOut = "1 ping-pong udp sockperf 5.0 9.0 100000 50\n1 ping-pong udp ours 6.0 10.0 100000 100\n" +
		"1 ping-pong tcp ours 7.0 11.0 90000 90\n1 ping-pong tcp sockperf 5.6 9.0 90000 60\n2 ping-pong udp ours failed\n"
	vsRBOut    = "    bench_test.go:220: ops/s per round: redis-benchmark [50000 40000], resp [55000 36000], glide [10000 9000]; paired resp/rb [1.10 0.90]\n"
	goRedisOut = "1 1 go-redis 20000 45.0 60.0 1.500\n1 1 resp 21000 42.0 58.0 1.400\n" +
		"1 4 resp 50000 70.0 150.0 3.000\n1 4 go-redis 45000 80.0 160.0 3.100\n"
	ethtoolOut = "BenchmarkVethSnapshot/ioctl-2         \t  150000\t     16201 ns/op\t       0 B/op\n" +
		"BenchmarkVethSnapshot/ethtool-binary-2\t    1300\t   1840012 ns/op\t   44420 B/op\n" +
		"BenchmarkVethSnapshot/ioctl-new-snapshot-2\t  150000\t     12695 ns/op\n"
	nodeExporterOut = "# names agent 20 node_exporter 21 common 20\n# only node_exporter node_ethtool_x{device=\"eth0\"}\n" +
		"1 agent 300.0 500.0 200\n1 node_exporter 900.0 1500.0 600\n"
)

func TestParseVariants(t *testing.T) {
	rs := parseVariants(clientOut, 2, 0)
	require.Len(t, rs, 1, "round 2 has no stock figure")
	assert.InDelta(t, 9.69/15.79, rs[0].Ratios["goodput"], 1e-9)
	assert.InDelta(t, (17.1/9.69)/(35.0/15.79), rs[0].Ratios["cpu_per_byte"], 1e-9)

	rs = parseVariants(serverOut, 3, 0)
	require.Len(t, rs, 1)
	assert.InDelta(t, 1.1, rs[0].Ratios["goodput"], 1e-9)
	assert.InDelta(t, (44.0/22)/(50.0/20), rs[0].Ratios["cpu_per_byte"], 1e-9)
}

func TestParseUDP(t *testing.T) {
	rs := parseUDP(udpOut)
	require.Len(t, rs, 1)
	assert.InDelta(t, 1.2, rs[0].Ratios["goodput"], 1e-9)
	assert.InDelta(t, 60.0/99, rs[0].Ratios["server_cpu"], 1e-9)
	assert.Equal(t, 0.64, rs[0].Figures["iperf3_loss_pct"])
}

func TestParsePair(t *testing.T) {
	rs := parsePair(openLoopOut, "cachebench-1000", "plain-1000")
	require.Len(t, rs, 1)
	assert.InDelta(t, 1.15, rs[0].Ratios["p50"], 1e-9)
	assert.InDelta(t, 1.1, rs[0].Ratios["p99"], 1e-9)
	rs = parsePair(openLoopOut, "pingpong-ul1000", "sockperf-ul1000")
	require.Len(t, rs, 1)
	assert.InDelta(t, 0.9, rs[0].Ratios["p50"], 1e-9)
	assert.Empty(t, parsePair(openLoopOut, "cachebench-5000", "plain-5000"))
}

func TestParseOpenLoopDefaultMode(t *testing.T) {
	out := openLoopOut + "1 cachebench-1000-kernel 50.6 96.8 3.0 2.0 999.9 0\n" +
		"2 plain-1000 40.0 80.0\n2 cachebench-1000-kernel 44.0 80.0 3.0 2.0 999.9 0 72.0\n"
	rs := parseOpenLoop(out, "1000")
	require.Len(t, rs, 2, "a round without the -kernel=false run still counts")
	assert.InDelta(t, 50.6/40, rs[0].Ratios["p50"], 1e-9, "the default mode's run against the plain client")
	assert.InDelta(t, 1.1, rs[0].Ratios["kernel_cost_p50"], 1e-9, "the default over -kernel=false")
	assert.InDelta(t, 1.1, rs[1].Ratios["p50"], 1e-9)
	assert.NotContains(t, rs[1].Ratios, "kernel_cost_p50")
	assert.NotContains(t, rs[0].Ratios, "service_p99", "a line without the service time")
	assert.InDelta(t, 72.0/80, rs[1].Ratios["service_p99"], 1e-9, "the service time's p99 over the plain client's p99")
	assert.Empty(t, parseOpenLoop(openLoopOut, "1000"), "no default-mode run, no round")
}

func TestParseUnderLoadKeepsOurCPU(t *testing.T) {
	rs := parseUnderLoad(openLoopOut + "2 sockperf-ul1000 30.0 60.0\n2 pingpong-ul1000 33.0 54.0 1.0 2.0 4.5\n")
	require.Len(t, rs, 2)
	assert.InDelta(t, 0.9, rs[0].Ratios["p50"], 1e-9)
	assert.NotContains(t, rs[0].Figures, "ours_cpu_pct", "an older pingpong line without its CPU")
	assert.InDelta(t, 1.1, rs[1].Ratios["p50"], 1e-9)
	assert.InDelta(t, 4.5, rs[1].Figures["ours_cpu_pct"], 1e-9)
}

func TestParseSockperf(t *testing.T) {
	rs := parseSockperfClient(nil, sockperfClientOut, "udp")
	rs = parseSockperfClient(rs, strings.ReplaceAll(sockperfClientOut, "ours p50 2", "ours p50 3"), "tcp")
	require.Len(t, rs, 2)
	assert.InDelta(t, 20.0/19, rs[0].Ratios["udp_p50"], 1e-9)
	assert.InDelta(t, 30.0/19, rs[0].Ratios["tcp_p50"], 1e-9)

	rs = parseSockperfServer(sockperfServerOut)
	require.Len(t, rs, 1)
	assert.InDelta(t, 1.2, rs[0].Ratios["udp_p50"], 1e-9)
	assert.InDelta(t, 2.0, rs[0].Ratios["udp_cpu_per_msg"], 1e-9)
	assert.InDelta(t, 1.5, rs[0].Ratios["tcp_cpu_per_msg"], 1e-9)
}

// connect-alternate.sh's rounds pair cachebench's run with redis-benchmark's
// of the same round, in either order; a round missing one is left out.
func TestParseConnectAlternate(t *testing.T) {
	out := `# N=20000 GETs and SETs a run (40000 connections), SIZE=ops, PAUSE=2s
# round 1 load 0.31
1 cachebench 13000 14116 14116
1 redis-benchmark 14000 14116 14200
# round 1 ratio 0.929
2 redis-benchmark 15000 14200 14300
2 cachebench 12000 14300 14310
3 cachebench 1 2 3
cachebench/redis-benchmark ops/s: median 0.864x [0.800-0.929] over 2 rounds
`
	rounds := parseConnectAlternate(out)
	require.Len(t, rounds, 2)
	assert.InDelta(t, 13000.0/14000, rounds[0].Ratios["ops"], 1e-9)
	assert.InDelta(t, 12000.0/15000, rounds[1].Ratios["ops"], 1e-9)
	assert.Equal(t, 14300.0, rounds[1].Figures["cachebench_timewait_before"])
	assert.Equal(t, 15000.0, rounds[1].Figures["redis_benchmark_ops"])
}

func TestParseCache(t *testing.T) {
	rb, resp, glide, ok := parseVsRedisBenchmark(vsRBOut)
	require.True(t, ok)
	assert.Equal(t, []float64{50000, 40000}, rb)
	assert.Equal(t, []float64{55000, 36000}, resp)
	assert.Equal(t, []float64{10000, 9000}, glide)
	_, _, _, ok = parseVsRedisBenchmark("ops/s per round: redis-benchmark [1 2], resp [1], glide []")
	assert.False(t, ok, "rounds of unequal length")

	rs := parseGoRedis(goRedisOut)
	require.Len(t, rs, 1)
	assert.InDelta(t, 42.0/45, rs[0].Ratios["p50_w1"], 1e-9)
	assert.InDelta(t, 50000.0/45000, rs[0].Ratios["ops_w4"], 1e-9)
	assert.InDelta(t, (1.4/21000)/(1.5/20000), rs[0].Ratios["cpu_per_op_w1"], 1e-9)
}

func TestParseEthtoolAndNodeExporter(t *testing.T) {
	rs := parseEthtoolBench(ethtoolOut)
	require.Len(t, rs, 1, "ioctl-new-snapshot is not a round")
	assert.InDelta(t, 1840012.0/16201, rs[0].Ratios["speed"], 1e-9)

	rs, ag := parseNodeExporter(nodeExporterOut)
	require.Len(t, rs, 1)
	assert.InDelta(t, 1.0/3, rs[0].Ratios["cpu_per_scrape"], 1e-9)
	require.NotNil(t, ag)
	assert.Equal(t, 21, ag.Compared)
	assert.Equal(t, 20, ag.Agree)
	assert.False(t, ag.OK())
	assert.Equal(t, []string{`only node_exporter: node_ethtool_x{device="eth0"}`}, ag.Detail)
}

func TestCounterAgreement(t *testing.T) {
	before := ethtool.Stats{{Name: "rx", Value: 10}, {Name: "tx", Value: 5}, {Name: "gone", Value: 1}}
	after := ethtool.Stats{{Name: "rx", Value: 12}, {Name: "tx", Value: 5}, {Name: "gone", Value: 1}}
	ours := ethtool.Stats{{Name: "rx", Value: 11}, {Name: "tx", Value: 6}, {Name: "new", Value: 0}}
	ag := counterAgreement(before, ours, after)
	assert.Equal(t, 4, ag.Compared)
	assert.Equal(t, 1, ag.Agree)
	assert.Contains(t, ag.Detail, "tx: ours 6 outside ethtool's 5..5")
	assert.Contains(t, ag.Detail, "only ours: new")
	assert.Contains(t, ag.Detail, "only ethtool -S: gone")
}

func TestLoadParsers(t *testing.T) {
	ct, err := parseProcStat(strings.NewReader("cpu  100 0 50 800 50 0 0 0 7 0\ncpu0 1 2 3 4 5\n"))
	require.NoError(t, err)
	assert.Equal(t, cpuTimes{busy: 150, total: 1000}, ct)
	_, err = parseProcStat(strings.NewReader("intr 1\n"))
	assert.Error(t, err)
	v, err := parsePSITotal(strings.NewReader("some avg10=95.68 avg60=71.14 avg300=26.42 total=100551955\nfull avg10=0.00 total=0\n"))
	require.NoError(t, err)
	assert.Equal(t, 100551955.0, v)
	assert.Equal(t, "eth0", defaultRouteIface(strings.NewReader(
		"Iface\tDestination\tGateway\nlo\t0000007F\t00000000\neth0\t00000000\t010200C0\n")))
}

func TestMedianAndSummarize(t *testing.T) {
	assert.Equal(t, 0.0, median(nil))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	e := &Entry{Rounds: []Round{
		{Ratios: map[string]float64{"goodput": 1.1}}, {Ratios: map[string]float64{"goodput": 0.9, "cpu_per_byte": 1}},
		{Ratios: map[string]float64{"goodput": 1.0}},
	}}
	summarize(e, anchorNamed("iperf3-client"))
	require.Len(t, e.Ratios, 2)
	assert.Equal(t, Ratio{Metric: "goodput", Label: "goodput", Better: "higher", Median: 1.0, Min: 0.9, Max: 1.1, N: 3}, e.Ratios[0])
	assert.Equal(t, 1, e.Ratios[1].N)
}

// FuzzParsers feeds every parser the same text: none may panic, and every
// ratio a parser gives is positive.
func FuzzParsers(f *testing.F) {
	for _, s := range []string{clientOut, serverOut, udpOut, openLoopOut, sockperfClientOut, sockperfServerOut,
		vsRBOut, goRedisOut, ethtoolOut, nodeExporterOut, "", "1 ours 0 0\n1 stock 0 0\n", "cpu 1 2 3\nsome total=x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var all []Round
		all = append(all, parseVariants(s, 2, 0)...)
		all = append(all, parseVariants(s, 3, 0)...)
		all = append(all, parseUDP(s)...)
		all = append(all, parsePair(s, "cachebench-1000", "plain-1000")...)
		all = append(all, parseOpenLoop(s, "1000")...)
		all = append(all, parseUnderLoad(s)...)
		all = append(all, parseSockperfClient(nil, s, "udp")...)
		all = append(all, parseSockperfServer(s)...)
		all = append(all, parseGoRedis(s)...)
		all = append(all, parseConnectAlternate(s)...)
		all = append(all, parseEthtoolBench(s)...)
		rs, _ := parseNodeExporter(s)
		all = append(all, rs...)
		parseVsRedisBenchmark(s)
		parseProcStat(strings.NewReader(s))
		parsePSITotal(strings.NewReader(s))
		defaultRouteIface(strings.NewReader(s))
		for _, r := range all {
			for k, v := range r.Ratios {
				if !(v > 0) {
					t.Fatalf("ratio %s = %v from %q", k, v, s)
				}
			}
		}
	})
}

func TestCommandLine(t *testing.T) {
	e := &env{root: "/r", bin: "/tmp/b"}
	assert.Equal(t, "ROUNDS=5 NP3=$BIN/iperf3 scripts/bench/x.sh ours=$BIN/iperf3 -- -l 128K",
		e.command([]string{"ROUNDS=5", "NP3=/tmp/b/iperf3"}, "/r/scripts/bench/x.sh", "ours=/tmp/b/iperf3", "--", "-l", "128K"))
	assert.Equal(t, "go test -run '^$' -bench 'VsRedisBenchmark/pool-plain$' ./cache/glide",
		e.command(nil, "go", "test", "-run", "^$", "-bench", "VsRedisBenchmark/pool-plain$", "./cache/glide"))
}
