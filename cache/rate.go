package cache

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/latency"
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
	if w.Mode == Pooled {
		// Clients are created before the schedule starts, so that the first
		// operations do not pay for them; a failure is retried (and
		// counted) by the worker's first operation.
		var wg sync.WaitGroup
		for _, st := range states {
			wg.Go(func() { st.pooled, _ = wk.newClient(ctx) })
		}
		wg.Wait()
	}
	// One worker runs on the schedule's own thread, which spins between
	// requests when they are under 2 ms apart (latency.ScheduleConfig.Spin)
	// and another P is left: it may as well spin for each reply too, which
	// spares the reply the kernel's wake-up. Several workers would each
	// take a core, so they sleep.
	var spin time.Duration
	if w.Workers == 1 && w.Rate > 500 && runtime.GOMAXPROCS(0) > 1 {
		spin = 2 * time.Millisecond
	}
	sres, err := latency.Schedule(ctx, &latency.ScheduleConfig{
		Rate: w.Rate, Arrival: w.Arrival, Workers: w.Workers, Duration: w.Duration,
		Count: w.MaxOps, Seed: w.Seed, Recorder: &latency.RecorderConfig{Lowest: recordLowest},
		Do: func(ctx context.Context, r latency.Request) error {
			st := &stamps{sent: r.Sent, arrived: r.Arrived, spin: spin}
			if w.Mode == ConnectPerOp {
				// The operation starts with its dial, which is the
				// network's and the server's time: Start stands for its
				// send.
				st.sent = nil
			}
			err := states[r.Worker].attempt(withStamps(ctx, st))
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
