package latency

import (
	"context"
	"slices"
	"strconv"
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

// BenchmarkSockperfUnderLoad compares this package's under-load client in
// its default mode (a sender that sleeps to each send, round trips to the
// reply's kernel receive stamp) with `sockperf under-load --mps=1000
// --full-rtt` against ONE stock `sockperf server`, the two clients
// alternated in every iteration (even ones run ours first; -benchtime Nx for
// N rounds of 3 s each). It reports the medians over the rounds of both
// clients' p50 and p99, of the per-round ratios ours/sockperf (issue 42's
// targets: p50 at most 1.1x, p99 at most 1.5x) and of the CPU our client
// used per second of run, its own threads' (PingPongResult.CPU) and the
// whole test process's (getrusage), in CPU nanoseconds a second (1e8 is 10 %
// of a core, the target).
//
//	go test -run '^$' -bench SockperfUnderLoad -benchtime 5x ./latency
func BenchmarkSockperfUnderLoad(b *testing.B) {
	addr := startSockperfServer(b, "udp")
	host, port, _ := strings.Cut(addr, ":")
	const secs = 3
	args := []string{"under-load", "--full-rtt", "--mps=1000", "-i", host, "-p", port, "-t", strconv.Itoa(secs)}
	var r50, r99, ours50, ours99, theirs50, theirs99, threads, process []float64
	for round := 0; b.Loop(); round++ {
		var rep sockperfReport
		var res *PingPongResult
		var proc time.Duration
		ours := func() {
			c0 := processCPU()
			var err error
			res, err = PingPong(context.Background(), addr, &PingPongConfig{Duration: secs * time.Second, MPS: 1000, DiscardSamples: true})
			proc = processCPU() - c0
			require.NoError(b, err)
		}
		if round%2 == 0 {
			ours()
			rep, _ = runSockperf(b, args...)
		} else {
			rep, _ = runSockperf(b, args...)
			ours()
		}
		p50, p99 := rep.Percentiles["50.000"], rep.Percentiles["99.000"]
		ours50, ours99, theirs50, theirs99 = append(ours50, usOf(res.P50)), append(ours99, usOf(res.P99)), append(theirs50, p50), append(theirs99, p99)
		r50, r99 = append(r50, usOf(res.P50)/p50), append(r99, usOf(res.P99)/p99)
		threads = append(threads, float64(res.CPU)/res.RunTime.Seconds())
		process = append(process, float64(proc)/res.RunTime.Seconds())
		b.Logf("round %d: p50 ours %.1f us sockperf %.1f us (%.2fx); p99 ours %.1f us sockperf %.1f us (%.2fx); our CPU %.1f %% of a core (threads), %.1f %% (process)",
			round+1, usOf(res.P50), p50, r50[round], usOf(res.P99), p99, r99[round], threads[round]/1e7, process[round]/1e7)
	}
	med := func(v []float64) float64 { return AggregateFunc(v, func(x float64) float64 { return x }).Median }
	b.ReportMetric(med(ours50)*1e3, "p50-ns")
	b.ReportMetric(med(theirs50)*1e3, "sockperf-p50-ns")
	b.ReportMetric(med(r50), "p50-ratio")
	b.ReportMetric(med(ours99)*1e3, "p99-ns")
	b.ReportMetric(med(theirs99)*1e3, "sockperf-p99-ns")
	b.ReportMetric(med(r99), "p99-ratio")
	b.ReportMetric(med(threads), "cpu-ns/s")
	b.ReportMetric(med(process), "process-cpu-ns/s")
	b.ReportMetric(0, "ns/op")
}
