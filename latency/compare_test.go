package latency

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSockperfComparison compares this package's ping-pong client with
// sockperf's own client against ONE stock `sockperf server`, alternating the
// two clients once per iteration (run it with -benchtime Nx for N rounds of
// -compare-seconds each). It reports the medians over the rounds of both
// clients' p50 and p99 round-trip times and of the per-round ratio
// ours/sockperf, so a noisy machine affects both sides alike.
//
//	go test -run '^$' -bench SockperfComparison -benchtime 5x ./latency
func BenchmarkSockperfComparison(b *testing.B) {
	for _, tc := range []struct {
		network string
		mode    time.Duration
	}{{"udp", time.Millisecond}, {"udp", 0}, {"tcp", time.Millisecond}, {"tcp", 0}} {
		b.Run(tc.network+"-"+modeName(tc.mode), func(b *testing.B) {
			addr := startSockperfServer(b, tc.network)
			host, port, _ := strings.Cut(addr, ":")
			args := []string{"ping-pong", "--full-rtt", "-i", host, "-p", port, "-t", "1", "-m", "64"}
			if tc.network == "tcp" {
				args = append(args, "--tcp")
			}
			var ours, theirs, ratio, ours99, theirs99 []float64
			for b.Loop() {
				rep, _ := runSockperf(b, args...)
				res, err := PingPong(context.Background(), addr, &PingPongConfig{
					Network: tc.network, Spin: tc.mode, Duration: time.Second, MessageSize: 64,
					DiscardSamples: true,
				})
				require.NoError(b, err)
				p50 := rep.Percentiles["50.000"]
				ours = append(ours, usOf(res.P50))
				theirs = append(theirs, p50)
				ratio = append(ratio, usOf(res.P50)/p50)
				ours99 = append(ours99, usOf(res.P99))
				theirs99 = append(theirs99, rep.Percentiles["99.000"])
				b.Logf("round %d: ours p50 %.3f us, sockperf p50 %.3f us, ratio %.3f (ours: n=%d sent=%d recv=%d dropped=%d ooo=%d)", len(ratio), usOf(res.P50), p50, usOf(res.P50)/p50, res.Observations, res.Sent, res.Received, res.Dropped, res.OutOfOrder)
			}
			med := func(v []float64) float64 { return AggregateFunc(v, func(x float64) float64 { return x }).Median }
			b.ReportMetric(med(ours)*1e3, "p50-ns")
			b.ReportMetric(med(theirs)*1e3, "sockperf-p50-ns")
			b.ReportMetric(med(ratio), "p50-ratio")
			b.ReportMetric(slices.Max(ratio), "max-p50-ratio")
			b.ReportMetric(med(ours99)*1e3, "p99-ns")
			b.ReportMetric(med(theirs99)*1e3, "sockperf-p99-ns")
			b.ReportMetric(0, "ns/op")
		})
	}
}
