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
// workers, or when cfg.Duration (1 minute when zero) runs out first. It
// reports p50-ns, p99-ns and ops/s, with ns/op set to 0 because the requests
// run concurrently, and errors/op; the benchmark fails if the endpoint check
// fails or cfg is invalid.
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
	if r.Attempts > 0 {
		b.ReportMetric(float64(r.Errors)/float64(r.Attempts), "errors/op")
	}
}
