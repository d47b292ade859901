package cachetest

import (
	"context"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
)

// defaultBenchDuration caps a Benchmark run when cfg.Duration is zero.
const defaultBenchDuration = time.Minute

// Benchmark runs the workload cfg against ep for a user's `go test -bench`.
// One b.N iteration is one request (a GET or SET, in connect mode with its
// connection set-up and close): the run stops after b.N of them across all
// workers, or when cfg.Duration (1 minute when zero) runs out first.
//
// It reports metrics in the base units benchstat scales: p50-ns and p99-ns
// (of the requests that succeeded) and ops/s, the run's own rate (requests
// that succeeded per second of the run's window), its one throughput
// figure. ns/op is set to 0, which the benchmark line leaves out, because
// the requests run concurrently; errors/op (failed requests per request)
// is reported in every run, zero included, so that benchstat compares the
// same samples of each. The benchmark fails if cfg is invalid, the
// endpoint check fails, or no request succeeded. With
// NETPERFKIT_BENCH_HISTOGRAMS set it also writes the histogram of the
// requests that succeeded, for shard.MergeHistogramLogs.
func Benchmark(b *testing.B, ep *cache.Endpoint, cfg *cache.WorkloadConfig) {
	b.Helper()
	var w cache.WorkloadConfig
	if cfg != nil {
		w = *cfg
	}
	w.MaxOps = int64(b.N)
	if w.Duration <= 0 {
		w.Duration = defaultBenchDuration
	}
	b.ResetTimer()
	r, err := cache.Run(context.Background(), ep, &w)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(r.Latency.P50), "p50-ns")
	b.ReportMetric(float64(r.Latency.P99), "p99-ns")
	b.ReportMetric(r.OpsPerSec, "ops/s")
	var errs float64
	if r.Attempts > 0 {
		errs = float64(r.Errors) / float64(r.Attempts)
	}
	b.ReportMetric(errs, "errors/op")
	writeBenchHistogram(b, r.Histogram)
}
