package cache_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// BenchmarkProbe measures probes of fresh connections and how much of each
// probe's wall time its phases account for (phase-share, 1 = all of it; the
// rest is the prober's own bookkeeping between phases).
func BenchmarkProbe(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  *cachetest.Config
	}{
		{"plain", nil},
		{"tls-acl", &cachetest.Config{TLS: true, User: "bench", Password: "pw"}},
		{"cluster", &cachetest.Config{Cluster: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := cachetest.NewServer(b, tc.cfg)
			p, err := cache.NewProber(endpointFor(s))
			if err != nil {
				b.Fatal(err)
			}
			var shares []float64
			var totals []time.Duration
			b.ResetTimer()
			for b.Loop() {
				r, err := p.Probe(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				var sum time.Duration
				for _, d := range r.Phases {
					sum += d
				}
				shares = append(shares, float64(sum)/float64(r.Total))
				totals = append(totals, r.Total)
			}
			slices.Sort(shares)
			slices.Sort(totals)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(totals[len(totals)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(shares[len(shares)/2], "phase-share-p50")
			b.ReportMetric(shares[len(shares)/20], "phase-share-p05")
			b.ReportMetric(shares[0], "phase-share-min")
		})
	}
}

// BenchmarkWorkload is the benchmark helper on a local server, per mode (the
// glide engine's are in package cache/glide).
func BenchmarkWorkload(b *testing.B) {
	s := cachetest.NewServer(b, nil)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		b.Run("resp-"+string(mode), func(b *testing.B) {
			cachetest.Benchmark(b, endpointFor(s), &cache.WorkloadConfig{Mode: mode, Workers: 4})
		})
	}
}
