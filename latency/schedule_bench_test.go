package latency

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkScheduleLateness measures the scheduler's own error: how late
// requests start after their intended time when the requests themselves
// cost nothing, at 10k and 100k requests per second, uniform and Poisson.
// Each iteration is one request (b.N requests at the rate); it reports the
// start lateness percentiles in base units (ns, which benchstat scales),
// the late fraction and the achieved/target ratio, and ns/op 0.
func BenchmarkScheduleLateness(b *testing.B) {
	for _, rate := range []float64{10_000, 100_000} {
		for _, a := range []Arrival{ArrivalUniform, ArrivalPoisson} {
			b.Run(fmt.Sprintf("%.0fk/%s", rate/1000, a), func(b *testing.B) {
				cfg := &ScheduleConfig{Rate: rate, Arrival: a, Workers: 4, Count: int64(b.N), Do: func(context.Context, Request) error { return nil }}
				res, err := Schedule(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.StartLateness.P50), "p50-late-ns")
				b.ReportMetric(float64(res.StartLateness.P99), "p99-late-ns")
				b.ReportMetric(float64(res.StartLateness.Max), "max-late-ns")
				b.ReportMetric(float64(res.Late)/float64(max(res.Started, 1)), "late-frac")
				if a == ArrivalUniform && res.Window > 0 {
					b.ReportMetric(res.AchievedRate/rate, "achieved/target")
				}
				// The rate sets the time per request: it says nothing.
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkScheduleOverhead compares the cost per request of the open-loop
// scheduler, run flat out (a rate no request can keep up with, so the
// dispatcher never waits), with a closed loop that times and records each
// call the same way (two clock reads, two histogram records).
func BenchmarkScheduleOverhead(b *testing.B) {
	nop := func(context.Context, Request) error { return nil }
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("open-loop/workers=%d", workers), func(b *testing.B) {
			_, err := Schedule(context.Background(), &ScheduleConfig{Rate: 1e12, Workers: workers, Count: int64(b.N), Do: nop})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("closed-loop", func(b *testing.B) {
		resp, _ := NewRecorder(nil)
		serv, _ := NewRecorder(nil)
		rw, sw := resp.Worker(), serv.Worker()
		ctx := context.Background()
		var req Request
		for i := 0; b.Loop(); i++ {
			t0 := time.Now()
			req.Seq = int64(i)
			_ = nop(ctx, req)
			d := time.Since(t0)
			rw.Record(d)
			sw.Record(d)
		}
	})
}
