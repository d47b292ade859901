package slo_test

import (
	"context"
	"fmt"
	"log"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency/slo"
)

func ExamplePingPong() {
	// The highest under-load rate at which a sockperf server's p99.9
	// round trip stays within 200 µs.
	objective, err := slo.Parse("p99.9=200us")
	if err != nil {
		log.Fatal(err)
	}
	res, err := slo.PingPong(context.Background(), "10.0.0.2:11111", nil,
		&slo.Config{SLO: objective, Start: 10_000, StepDuration: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range res.Steps {
		log.Printf("%s %.0f msg/s: p99.9 %v, met %v", st.Phase, st.Rate, st.Percentile, st.Met)
	}
	log.Printf("%.0f msg/s meets %s; broke at %.0f", res.Rate, res.SLO, res.BrokeAt)
}

// Search over any load: here a model whose p99 is 100 µs up to 3,000
// requests per second and 1 s above.
func ExampleSearch() {
	res, err := slo.Search(context.Background(), &slo.Config{
		SLO: slo.SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, Precision: 0.01,
		Measure: func(_ context.Context, rate float64, _ time.Duration) (slo.Step, error) {
			m := slo.Step{AchievedRate: rate}
			m.Response = modelHistogram(rate <= 3000)
			return m, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.0f met, %.0f broke\n", res.Rate, res.BrokeAt)
	// Output: 3000 met, 3016 broke
}

// modelHistogram holds 1000 responses of 100 µs when fast, 1 s otherwise.
func modelHistogram(fast bool) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	v := int64(time.Second)
	if fast {
		v = int64(100 * time.Microsecond)
	}
	for range 1000 {
		_ = h.RecordValue(v)
	}
	return h
}
