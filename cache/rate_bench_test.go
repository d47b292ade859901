package cache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// BenchmarkOpenLoopRate checks issue 14's "achieved ops/s within 2% of the
// target while the server keeps up": one open-loop run of 2 s per
// iteration at each rate, in both modes, reporting ops/s (successes in the
// window) over the target, the late fraction, and the response and service
// p99.
//
//	go test -run '^$' -bench OpenLoopRate -benchtime 3x ./cache/
func BenchmarkOpenLoopRate(b *testing.B) {
	s := cachetest.NewServer(b, nil)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		for _, rate := range []float64{1000, 5000} {
			b.Run(fmt.Sprintf("%s/%.0f", mode, rate), func(b *testing.B) {
				var ratio, late, resp, serv float64
				for b.Loop() {
					r, err := cache.Run(context.Background(), s.Endpoint(), &cache.WorkloadConfig{
						Mode: mode, Rate: rate, Duration: 2 * time.Second, KeySpace: 1000})
					if err != nil {
						b.Fatal(err)
					}
					ratio += r.OpsPerSec / rate
					late += float64(r.Schedule.Late) / float64(max(r.Schedule.Started, 1))
					resp += float64(r.Schedule.Response.P99) / 1e3
					serv += float64(r.Schedule.Service.P99) / 1e3
				}
				n := float64(b.N)
				b.ReportMetric(ratio/n, "ops/target")
				b.ReportMetric(late/n, "late-frac")
				b.ReportMetric(resp/n, "resp-p99-us")
				b.ReportMetric(serv/n, "serv-p99-us")
			})
		}
	}
}
