package cache

import (
	"context"
	"errors"

	"github.com/netperfkit/netperfkit/latency"
)

// Range is a [min, max] pair; it marshals as a two-element JSON array.
type Range [2]float64

// Aggregate is the field study's E3 row: per engine and mode, the median over
// runs of p50, p99 and ops/s with their min-max ranges, and attempts and errors
// summed over runs.
type Aggregate struct {
	Engine         Engine              `json:"engine"`
	Mode           Mode                `json:"mode"`
	Runs           int                 `json:"runs"`
	P50Us          float64             `json:"p50_us"`
	P50UsRange     Range               `json:"p50_us_range"`
	P99Us          float64             `json:"p99_us"`
	P99UsRange     Range               `json:"p99_us_range"`
	OpsPerSec      float64             `json:"ops_per_sec"`
	OpsPerSecRange Range               `json:"ops_per_sec_range"`
	Attempts       int64               `json:"attempts"`
	Errors         int64               `json:"errors"`
	ErrorsByKind   map[ErrorKind]int64 `json:"errors_by_kind"`
	// Results holds every run.
	Results []*RunResult `json:"runs_detail"`
}

// Summarize aggregates runs of one engine and mode (the median of an even
// count is the mean of the two middle values). It returns nil for no runs.
func Summarize(runs []*RunResult) *Aggregate {
	if len(runs) == 0 {
		return nil
	}
	a := &Aggregate{Engine: runs[0].Engine, Mode: runs[0].Mode, Runs: len(runs),
		ErrorsByKind: map[ErrorKind]int64{}, Results: runs}
	for _, r := range runs {
		a.Attempts += r.Attempts
		a.Errors += r.Errors
		for k, n := range r.ErrorsByKind {
			a.ErrorsByKind[k] += n
		}
	}
	p50 := latency.AggregateFunc(runs, func(r *RunResult) float64 { return r.P50Us })
	p99 := latency.AggregateFunc(runs, func(r *RunResult) float64 { return r.P99Us })
	ops := latency.AggregateFunc(runs, func(r *RunResult) float64 { return r.OpsPerSec })
	a.P50Us, a.P50UsRange = p50.Median, Range{p50.Min, p50.Max}
	a.P99Us, a.P99UsRange = p99.Median, Range{p99.Min, p99.Max}
	a.OpsPerSec, a.OpsPerSecRange = ops.Median, Range{ops.Min, ops.Max}
	return a
}

// RunRepeated runs the workload runs times (zero means 3) and aggregates the
// runs. onRun, when set, is called after each run. It stops at the first run
// that returns an error, returning that error and nil.
func RunRepeated(ctx context.Context, ep *Endpoint, cfg *WorkloadConfig, runs int, onRun func(*RunResult)) (*Aggregate, error) {
	if ep == nil {
		return nil, errors.New("cache: nil endpoint")
	}
	if runs <= 0 {
		runs = 3
	}
	w := cfg.withDefaults(ep)
	e, err := newEngine(ctx, ep, &w)
	if err != nil {
		return nil, err
	}
	var all []*RunResult
	for range runs {
		r, err := runEngine(ctx, e, &w)
		if err != nil {
			return nil, err
		}
		if onRun != nil {
			onRun(r)
		}
		all = append(all, r)
	}
	return Summarize(all), nil
}

// Comparison reports Other relative to Base: ratios Other/Base (a p50 ratio
// of 1.15 means Other's median latency is 15% higher) and differences
// Other-Base in microseconds. Comparing the glide and resp engines on the same
// endpoint and mode (Base resp, Other glide) gives the client library's own
// overhead, which endpoint measurements alone cannot separate.
type Comparison struct {
	Base           string  `json:"base"`
	Other          string  `json:"other"`
	P50Ratio       float64 `json:"p50_ratio"`
	P99Ratio       float64 `json:"p99_ratio"`
	OpsPerSecRatio float64 `json:"ops_per_sec_ratio"`
	P50DeltaUs     float64 `json:"p50_delta_us"`
	P99DeltaUs     float64 `json:"p99_delta_us"`
}

// Compare compares two aggregates, labelled by the caller. A ratio whose base
// is zero is zero.
func Compare(baseLabel string, base *Aggregate, otherLabel string, other *Aggregate) Comparison {
	ratio := func(o, b float64) float64 {
		if b == 0 {
			return 0
		}
		return o / b
	}
	return Comparison{
		Base:           baseLabel,
		Other:          otherLabel,
		P50Ratio:       ratio(other.P50Us, base.P50Us),
		P99Ratio:       ratio(other.P99Us, base.P99Us),
		OpsPerSecRatio: ratio(other.OpsPerSec, base.OpsPerSec),
		P50DeltaUs:     other.P50Us - base.P50Us,
		P99DeltaUs:     other.P99Us - base.P99Us,
	}
}
