package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/slo"
)

// search is one engine and mode's SLO search.
type search struct {
	Engine string         `json:"engine"`
	Mode   cache.ConnMode `json:"mode"`
	*slo.Result
}

// searchAll runs the SLO search for every engine and mode.
func searchAll(ctx context.Context, ep *cache.Endpoint, o *options, stderr io.Writer) (*output, error) {
	out := &output{Endpoint: ep.String(), Workers: o.workers, DurationSec: o.step.Seconds(), Ratio: o.ratio, Arrival: o.arrival.String()}
	for _, mode := range o.modes {
		for _, engine := range o.engines {
			name := cachecli.Name(engine)
			cfg := &cache.WorkloadConfig{Engine: engine, Mode: mode, Workers: o.workers, GetWeight: o.get, SetWeight: o.set, Arrival: o.arrival}
			res, err := searchRate(ctx, ep, cfg, &slo.Config{SLO: *o.slo, Start: o.start, StepDuration: o.step,
				OnStep: func(st slo.Step) {
					fmt.Fprintf(stderr, "cachebench: %s %s %s: %.0f ops/s (achieved %.0f): p%g %.0f us of %d requests (client's share p99 %.0f us), %d failed: %s\n",
						name, mode, st.Phase, st.Rate, st.AchievedRate, o.slo.Percentile, float64(st.Percentile)/1e3, st.Requests,
						float64(st.ClientShare)/1e3, st.Failed, st.Verdict())
				}})
			if err != nil {
				err = fmt.Errorf("%s %s: %w", name, mode, err)
				if ctx.Err() == nil {
					return nil, err
				}
				// Stopped: keep the steps so far.
				out.Searches = append(out.Searches, &search{Engine: name, Mode: mode, Result: res})
				out.Interrupted = true
				return out, err
			}
			out.Searches = append(out.Searches, &search{Engine: name, Mode: mode, Result: res})
		}
	}
	return out, nil
}

func printSearches(w io.Writer, o *output) {
	for _, s := range o.Searches {
		fmt.Fprintf(w, "%s %s on %s: SLO %s, steps of %gs\n", s.Engine, s.Mode, o.Endpoint, s.SLO, o.DurationSec)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "step\tphase\trate/s\tachieved/s\tpercentile us\trequests\tfailed\tclient p99 us\tSLO\t")
		for i, st := range s.Steps {
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.0f\t%d\t%d\t%.0f\t%s\t\n", i+1, st.Phase, st.Rate, st.AchievedRate, float64(st.Percentile)/1e3, st.Requests, st.Failed,
				float64(st.ClientShare)/1e3, st.Verdict())
		}
		tw.Flush()
		broke := "never, up to the maximum rate"
		if s.BrokeAt > 0 {
			broke = fmt.Sprintf("%.0f ops/s", s.BrokeAt)
		}
		fmt.Fprintf(w, "highest rate meeting %s: %.0f ops/s; broke at %s\n", s.SLO, s.Rate, broke)
		if n := len(s.Steps); n > 0 && s.Steps[n-1].Unjudged {
			fmt.Fprintf(w, "the search ended at %.0f ops/s: even a step ten times as long holds too few requests to judge %s there\n", s.Steps[n-1].Rate, s.SLO)
		}
		fmt.Fprintln(w)
	}
}

// searchRate searches for the highest open-loop rate (operations per second)
// whose response-time percentile on ep meets search.SLO, with
// slo.Search: each step is an open-loop cache.Run of cfg at the
// step's rate for search.StepDuration, cfg's Rate, Duration and MaxOps being
// replaced. A zero cfg.Workers is chosen per step as
// cache.WorkloadConfig.Workers says. Each step checks the endpoint before its
// schedule starts (outside the step's measurement); a step with failed
// operations breaks the SLO. When ctx ends it returns the steps so far and
// ctx.Err().
func searchRate(ctx context.Context, ep *cache.Endpoint, cfg *cache.WorkloadConfig, search *slo.Config) (*slo.Result, error) {
	if ep == nil {
		return &slo.Result{}, errors.New("nil endpoint")
	}
	return searchWith(ctx, func(ctx context.Context, c *cache.WorkloadConfig) (*cache.RunResult, error) {
		return cache.Run(ctx, ep, c)
	}, cfg, search)
}

// runFunc runs one step's workload: cache.Run on the endpoint, or a fake
// in tests.
type runFunc func(ctx context.Context, cfg *cache.WorkloadConfig) (*cache.RunResult, error)

// searchWith is searchRate with the step's run given.
func searchWith(ctx context.Context, run runFunc, cfg *cache.WorkloadConfig, search *slo.Config) (*slo.Result, error) {
	if search == nil {
		return &slo.Result{}, fmt.Errorf("%w: nil search *slo.Config", latency.ErrInvalidConfig)
	}
	var base cache.WorkloadConfig
	if cfg != nil {
		base = *cfg
	}
	base.MaxOps = 0
	sc := *search
	sc.Measure = func(ctx context.Context, rate float64, d time.Duration) (slo.Step, error) {
		c := base
		c.Rate, c.Duration = rate, d
		r, err := run(ctx, &c)
		if err != nil {
			return slo.Step{}, err
		}
		return measurement(r), nil
	}
	res, err := slo.Search(ctx, &sc)
	if res == nil {
		res = &slo.Result{}
	}
	if errors.Is(err, latency.ErrInvalidConfig) {
		err = fmt.Errorf("search: %w", err)
	}
	return res, err
}

// measurement is what an open-loop run tells the search: its response
// times, the rate its schedule achieved, its failures and the client's own
// share of the response times.
func measurement(r *cache.RunResult) slo.Step {
	m := slo.Step{Response: r.Histogram, Failed: r.Errors}
	if s := r.Schedule; s != nil {
		m.AchievedRate = s.AchievedRate
		m.ClientShare = s.ClientLateness.P99 + s.ReceiveWake.P99
	}
	return m
}
