package cache

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

// openClients creates the pooled clients of an open-loop run before the
// schedule starts, so that the first operations do not pay for them; a
// failure is retried (and counted) by the worker's first operation.
func (wk *worker) openClients(ctx context.Context, states []*client) {
	var wg sync.WaitGroup
	for _, st := range states {
		wg.Go(func() { st.pooled, _ = wk.newClient(ctx) })
	}
	wg.Wait()
}

// blockingReads reports whether an open-loop run of w reads its replies
// in a blocking receive (kstamp's EnableBlock): one worker's pooled
// requests run on the schedule's goroutine, which sleeps to each send as
// a raw system call when the process has another P (latency.Schedule), so
// its replies wait as the plain client's do (docs/benchmarks.md, issue 42).
func blockingReads(w *WorkloadConfig) bool {
	return w.Workers == 1 && w.Mode == Pooled && runtime.GOMAXPROCS(0) >= 2
}

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
		wk.openClients(ctx, states)
	}
	// Replies are read in the kernel, never spun for: with one worker on
	// the schedule's own thread, spinning for each reply too cut the p50
	// to 0.6x a blocking client's but raised the p99 2-8x on a 2-core
	// machine whose other core serves the cache (docs/benchmarks.md, issue
	// 23), so the reply is awaited asleep: with one worker in a blocking
	// receive, as the plain reference client's is in recv (blockingReads),
	// and otherwise in the netpoller.
	kv := newKernelRecorder(w)
	block := blockingReads(w)
	sres, err := latency.Schedule(ctx, &latency.ScheduleConfig{
		Rate: w.Rate, Arrival: w.Arrival, Workers: w.Workers, Duration: w.Duration,
		Count: w.MaxOps, Seed: w.seed, Recorder: &latency.RecorderConfig{Lowest: recordLowest},
		Do: func(ctx context.Context, r latency.Request) error {
			st := &stamps{sent: r.Sent, arrived: r.Arrived, left: r.Left, kernel: kv, sample: kv.sampled(r.Seq), block: block}
			if w.Mode == ConnectPerOp {
				// The operation starts with its dial, which is the
				// network's and the server's time: Start stands for its
				// send.
				st.sent, st.left = nil, nil
			}
			ctx = withStamps(ctx, st)
			if w.Mode == ConnectPerOp {
				ctx = withNotes(ctx, &states[r.Worker].notes)
			}
			err := states[r.Worker].attempt(ctx)
			if err == nil || !ctxDone(ctx) {
				end := time.Now()
				states[r.Worker].causes.takeOp(&states[r.Worker].notes, end.Sub(r.Start), err)
				if w.OnOperation != nil {
					w.OnOperation(r.Intended, end, err)
				}
				wk.t.slots.record(states[r.Worker].slot, r.Intended, end, err)
			} else {
				states[r.Worker].notes.reset()
			}
			if err != nil && !ctxDone(ctx) {
				// The schedule paces retries: no pause after a refusal.
				wk.t.fail(err)
			}
			return err
		},
	})
	res := wk.t.res
	kv.fill(res, w)
	for _, st := range states {
		wk.t.mergeCauses(&st.causes)
	}
	if sres == nil {
		return res, fmt.Errorf("cache: %w", err)
	}
	res.TargetRate, res.Schedule = w.Rate, sres
	res.Elapsed = sres.Elapsed
	res.Succeeded = sres.SuccessResponse.Observations
	// An operation cut short by ctx ending is the caller's, not an
	// attempt: the schedule's Response still holds it.
	res.Attempts = res.Succeeded + res.Errors
	res.Window, res.SucceededInWindow = sres.Window, sres.SucceededInWindow
	res.OpsPerSec = opsPerSec(res.SucceededInWindow, res.Window)
	res.Latency, res.Histogram = sres.SuccessResponse, sres.SuccessResponseHistogram
	wk.t.fillCauses()
	if err != nil && ctxErr(ctx) == nil {
		return res, fmt.Errorf("cache: %w", err)
	}
	return res, res.outcome(ctx, wk.t.first)
}
