package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/slo"
)

// runOpen runs the workload open-loop at w.Rate on latency.Schedule.
func (wk *worker) runOpen(ctx context.Context) (*RunResult, error) {
	w := wk.w
	states := make([]*client, w.Workers)
	for i := range states {
		states[i] = wk.newState(uint64(i))
	}
	defer func() {
		for _, st := range states {
			st.close()
		}
	}()
	if w.Mode == ModePool {
		// Clients are created before the schedule starts, so that the first
		// operations do not pay for them; a failure is retried (and
		// counted) by the worker's first operation.
		var wg sync.WaitGroup
		for _, st := range states {
			wg.Go(func() { st.pooled, _ = wk.newClient(ctx) })
		}
		wg.Wait()
	}
	sres, err := latency.Schedule(ctx, &latency.ScheduleConfig{
		Rate: w.Rate, Arrival: w.Arrival, Workers: w.Workers, Duration: w.Duration,
		Count: w.MaxOps, Seed: w.Seed, Recorder: &latency.RecorderConfig{Lowest: recordLowest},
		Do: func(ctx context.Context, r latency.Request) error {
			err := states[r.Worker].attempt(ctx)
			if err != nil && !ctxDone(ctx) {
				// The schedule paces retries: no pause after a refusal.
				wk.t.fail(err)
			}
			return err
		},
	})
	if sres == nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	res := wk.t.res
	res.TargetRate, res.Schedule = w.Rate, sres
	res.Elapsed = sres.Elapsed
	res.Attempts = sres.Response.Observations
	res.Window, res.SucceededInWindow = sres.Window, sres.SucceededInWindow
	res.OpsPerSec = opsPerSec(res.SucceededInWindow, res.Window)
	res.Latency, res.Histogram = sres.Response, sres.ResponseHistogram
	return res, err
}

// SearchRate searches for the highest open-loop rate (operations per second)
// whose response-time percentile on ep meets search.SLO, with
// slo.Search: each step is an open-loop run of cfg (nil means
// defaults) at the step's rate for search.StepDuration, cfg's Rate, Duration
// and MaxOps being replaced. A zero cfg.Workers is chosen per step as
// WorkloadConfig.Workers says. The endpoint is checked and the engine opened
// once, before the first step; a step with failed operations breaks the
// SLO. When ctx ends it returns the steps so far and ctx.Err().
func SearchRate(ctx context.Context, ep *Endpoint, cfg *WorkloadConfig, search *slo.Config) (*slo.Result, error) {
	if ep == nil {
		return nil, errors.New("cache: nil endpoint")
	}
	var base WorkloadConfig
	if cfg != nil {
		base = *cfg
	}
	base.Rate, base.MaxOps = 1, 0
	w := base.withDefaults()
	newClient, err := openEngine(ctx, ep, &w)
	if err != nil {
		return nil, err
	}
	if search == nil {
		return nil, fmt.Errorf("%w: nil search *slo.Config", slo.ErrInvalidConfig)
	}
	sc := *search
	sc.Measure = func(ctx context.Context, rate float64, d time.Duration) (slo.Measurement, error) {
		c := base
		c.Rate, c.Duration = rate, d
		w := c.withDefaults()
		r, err := runEngine(ctx, newClient, &w)
		if err != nil {
			return slo.Measurement{}, err
		}
		return slo.Measurement{Response: r.Histogram, AchievedRate: r.Schedule.AchievedRate, Failed: r.Errors}, nil
	}
	res, err := slo.Search(ctx, &sc)
	if err != nil && res == nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return res, err
}
