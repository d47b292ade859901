package cache_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
)

// An open-loop run keeps its schedule in both modes: the schedule fixes how
// many operations are due, every one that started is recorded with both its
// response and its service time, and the ops/s it reports is the rate it
// achieved: its successes within the window per second of the window, of
// which only the operations still in flight at the window's end (one per
// worker at most) can be missing. How many started depends on the machine;
// the accounting does not.
func TestRunOpenLoop(t *testing.T) {
	s := debugServer(t)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		for _, arrival := range []latency.Arrival{latency.ArrivalUniform, latency.ArrivalPoisson} {
			t.Run(string(mode)+"/"+arrival.String(), func(t *testing.T) {
				cfg := shortRun(mode)
				cfg.Rate, cfg.Arrival, cfg.Workers, cfg.Duration = 1000, arrival, 8, time.Second
				r, err := cache.Run(context.Background(), endpointFor(s), cfg)
				require.NoError(t, err)
				sc := r.Schedule
				require.NotNil(t, sc)
				t.Logf("%s %s: %.0f ops/s, achieved %.0f/s, %d due, %d late, %d unstarted, response p99 %.0f us, service p99 %.0f us, start lateness p99 %.0f us",
					mode, arrival, r.OpsPerSec, sc.AchievedRate, sc.Due, sc.Late, sc.Unstarted, float64(sc.Response.P99)/1e3, float64(sc.Service.P99)/1e3, float64(sc.StartLateness.P99)/1e3)
				assert.Zero(t, r.Errors, "%v", r.ErrorExamples)
				assert.InDelta(t, 1000, r.TargetRate, 0)
				if arrival == latency.ArrivalUniform {
					assert.Equal(t, int64(1000), sc.Due, "the schedule is exact")
				} else {
					assert.InDelta(t, 1000, sc.Due, 160, "a Poisson process: about 1,000, standard deviation 32")
				}
				assert.Equal(t, sc.Due, sc.Started+sc.Unstarted)
				assert.Equal(t, sc.Started, r.Attempts, "every started operation is recorded")
				assert.Equal(t, r.Attempts, sc.Service.Observations)
				assert.Equal(t, r.Latency, sc.SuccessResponse, "Latency holds the successful operations' response times")
				assert.Equal(t, r.Latency, sc.Response, "all of them, here")
				// The client's own share is recorded beside them for every
				// operation; the RESP engine reads a pooled connection's
				// replies with their kernel arrival times on linux.
				assert.Equal(t, r.Attempts, sc.ClientLateness.Observations)
				if runtime.GOOS == "linux" && mode == cache.Pooled {
					assert.Equal(t, r.Attempts, sc.ReceiveWake.Observations)
				}
				require.NotNil(t, sc.ServiceHistogram)
				require.NotNil(t, r.Histogram)
				// Every operation started in the window; those that ended
				// after it were in flight at its end, at most one per
				// worker.
				assert.Equal(t, cfg.Duration, r.Window)
				assert.LessOrEqual(t, r.SucceededInWindow, sc.Started)
				assert.GreaterOrEqual(t, r.SucceededInWindow, sc.Started-int64(cfg.Workers))
				assert.Equal(t, sc.SucceededInWindow, r.SucceededInWindow)
				assert.InDelta(t, float64(r.SucceededInWindow)/r.Window.Seconds(), r.OpsPerSec, 1e-9)
				assert.InDelta(t, float64(sc.Started)/sc.Window.Seconds(), sc.AchievedRate, 1e-9)
			})
		}
	}
}

// slowNode serves RESP on loopback, answering each command after d: one
// connection gets at most one reply per d, however fast the machine.
func slowNode(t *testing.T, d time.Duration) *cache.Endpoint {
	addr, _ := fakeNode(t, func([]string) string {
		time.Sleep(d)
		return "+OK\r\n"
	})
	return &cache.Endpoint{Addr: addr}
}

// Coordinated omission, against a server that takes 5 ms per command
// (200 per second on the one connection) offered 1,000 per second: the
// queue of operations waiting for the connection grows for the whole run.
// Every bound below follows from the server's 5 ms and holds on any
// machine (a slow one only makes the queue longer): operation i, due at
// i ms, cannot be charged a start before 5i ms, so its response time, from
// its intended start, is at least 4i + 5 ms, and it cannot start before
// 5i ms either, 4i ms late. A closed loop on the same server
// slows its load down to the server's pace, so it never queues: that is
// how it hides the queue.
func TestRunOpenLoopCoordinatedOmission(t *testing.T) {
	const per = 5 * time.Millisecond
	ep := slowNode(t, per)
	cfg := &cache.WorkloadConfig{Workers: 1, Rate: 1000, Duration: time.Second, KeySpace: 100}
	r, err := cache.Run(context.Background(), ep, cfg)
	require.NoError(t, err)
	sc := r.Schedule
	t.Logf("open loop: %d due, %d started, %d late, %d unstarted; response p50 %.0f p99 %.0f us; service p50 %.0f p99 %.0f us",
		sc.Due, sc.Started, sc.Late, sc.Unstarted, float64(sc.Response.P50)/1e3, float64(sc.Response.P99)/1e3, float64(sc.Service.P50)/1e3, float64(sc.Service.P99)/1e3)
	assert.Zero(t, r.Errors, "%v", r.ErrorExamples)
	assert.Equal(t, int64(1000), sc.Due)
	assert.LessOrEqual(t, sc.Started, int64(cfg.Duration/per)+1, "the server's pace bounds the operations started")
	assert.Positive(t, sc.Unstarted, "operations still queued at the end are counted, not lost")
	assert.Positive(t, sc.Late, "the server fell behind")
	assert.GreaterOrEqual(t, sc.Service.Min, per-per/100, "each operation waits for the server's 5 ms")
	last := time.Duration(sc.Started - 1)
	slack := 2 * time.Millisecond // the histograms' resolution at these values, and the first start's offset
	assert.GreaterOrEqual(t, sc.Response.Max, 4*last*time.Millisecond+per-slack, "the response time includes the queue")
	assert.GreaterOrEqual(t, sc.StartLateness.Max, 4*last*time.Millisecond-slack)

	cfg.Rate, cfg.Duration = 0, 500*time.Millisecond
	closed, err := cache.Run(context.Background(), ep, cfg)
	require.NoError(t, err)
	t.Logf("closed loop: %.0f ops/s, p99 %.0f us", closed.OpsPerSec, float64(closed.Latency.P99)/1e3)
	assert.Nil(t, closed.Schedule)
	assert.LessOrEqual(t, closed.Attempts, int64(cfg.Duration/per)+1, "the closed loop runs at the server's pace: nothing waits")
	assert.GreaterOrEqual(t, closed.Latency.Min, per-per/100, "each latency is a service time")
}
