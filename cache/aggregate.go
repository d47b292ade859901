package cache

import (
	"context"
	"errors"

	"github.com/netperfkit/netperfkit/latency"
)

// Aggregate is the field study's E3 row: per engine and mode, the median over
// runs of p50, p99 (microseconds) and ops/s with their min-max ranges, and
// attempts and errors summed over runs.
type Aggregate struct {
	Engine       string              `json:"engine"`
	Mode         Mode                `json:"mode"`
	P50Us        latency.Range       `json:"p50_us"`
	P99Us        latency.Range       `json:"p99_us"`
	OpsPerSec    latency.Range       `json:"ops_per_sec"`
	Attempts     int64               `json:"attempts"`
	Errors       int64               `json:"errors"`
	ErrorsByKind map[ErrorKind]int64 `json:"errors_by_kind"`
	// Open-loop runs (WorkloadConfig.Rate) only: the target rate, the
	// medians of the achieved rate (operations started per second) and of
	// the service-time p99 (P50Us and P99Us are response times, from each
	// operation's intended start), and the late and unstarted operations
	// summed over runs.
	TargetRate   float64        `json:"target_rate,omitempty"`
	AchievedRate *latency.Range `json:"achieved_rate,omitempty"`
	ServiceP99Us *latency.Range `json:"service_p99_us,omitempty"`
	Late         int64          `json:"late,omitempty"`
	Unstarted    int64          `json:"unstarted,omitempty"`
	// Results holds every run; P50Us.N and the others' N count them.
	Results []*RunResult `json:"runs_detail"`
}

// Summarize aggregates runs of one engine and mode (the median of an even
// count is the mean of the two middle values). It returns nil for no runs.
func Summarize(runs []*RunResult) *Aggregate {
	if len(runs) == 0 {
		return nil
	}
	a := &Aggregate{Engine: runs[0].Engine, Mode: runs[0].Mode,
		ErrorsByKind: map[ErrorKind]int64{}, Results: runs}
	for _, r := range runs {
		a.Attempts += r.Attempts
		a.Errors += r.Errors
		for k, n := range r.ErrorsByKind {
			a.ErrorsByKind[k] += n
		}
	}
	a.P50Us = latency.AggregateFunc(runs, func(r *RunResult) float64 { return float64(r.Latency.P50) / 1e3 })
	a.P99Us = latency.AggregateFunc(runs, func(r *RunResult) float64 { return float64(r.Latency.P99) / 1e3 })
	a.OpsPerSec = latency.AggregateFunc(runs, func(r *RunResult) float64 { return r.OpsPerSec })
	if runs[0].Schedule != nil {
		summarizeOpen(a, runs)
	}
	return a
}

// RunRepeated runs the workload cfg.Runs times (3 by default) on one engine
// and aggregates the runs, calling cfg.OnRun after each. It stops at the
// first run that fails, returning that error and nil. When ctx ends it returns
// within about 100 ms (on the resp engine) the aggregate of the runs so far,
// the interrupted one included, and ctx.Err(); nil if no run had started.
func RunRepeated(ctx context.Context, ep *Endpoint, cfg *WorkloadConfig) (*Aggregate, error) {
	if ep == nil {
		return nil, errors.New("cache: nil endpoint")
	}
	w := cfg.withDefaults()
	newClient, err := openEngine(ctx, ep, &w)
	if err != nil {
		return nil, err
	}
	var all []*RunResult
	for range w.Runs {
		r, err := runEngine(ctx, newClient, &w)
		if r != nil && ctx.Err() != nil {
			all = append(all, r)
			return Summarize(all), ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		if w.OnRun != nil {
			w.OnRun(r)
		}
		all = append(all, r)
	}
	return Summarize(all), ctx.Err()
}

// Comparison reports Other relative to Base as ratios Other/Base of the
// medians: a p50 ratio of 1.15 means Other's median latency is 15% higher.
// Comparing the glide and resp engines on the same endpoint and mode (Base
// resp, Other glide) gives the client library's own overhead, which endpoint
// measurements alone cannot separate.
type Comparison struct {
	Base           string  `json:"base"`
	Other          string  `json:"other"`
	P50Ratio       float64 `json:"p50_ratio"`
	P99Ratio       float64 `json:"p99_ratio"`
	OpsPerSecRatio float64 `json:"ops_per_sec_ratio"`
}

// Compare compares two aggregates, labelled by the caller. A ratio whose base
// is zero is zero.
func Compare(baseLabel string, base *Aggregate, otherLabel string, other *Aggregate) Comparison {
	ratio := func(o, b latency.Range) float64 {
		if b.Median == 0 {
			return 0
		}
		return o.Median / b.Median
	}
	return Comparison{
		Base:           baseLabel,
		Other:          otherLabel,
		P50Ratio:       ratio(other.P50Us, base.P50Us),
		P99Ratio:       ratio(other.P99Us, base.P99Us),
		OpsPerSecRatio: ratio(other.OpsPerSec, base.OpsPerSec),
	}
}

// summarizeOpen fills in the open-loop fields of a.
func summarizeOpen(a *Aggregate, runs []*RunResult) {
	var sched []*latency.ScheduleResult
	for _, r := range runs {
		if r.Schedule != nil {
			sched = append(sched, r.Schedule)
			a.Late += r.Schedule.Late
			a.Unstarted += r.Schedule.Unstarted
		}
	}
	a.TargetRate = runs[0].TargetRate
	ach := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) float64 { return s.AchievedRate })
	svc := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) float64 { return float64(s.Service.P99) / 1e3 })
	a.AchievedRate, a.ServiceP99Us = &ach, &svc
}
