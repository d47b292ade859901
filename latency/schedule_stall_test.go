package latency

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 31: the wait of a request behind another one that the client itself
// sent late is the client's, the wait the server's own slowness caused is
// the server's. One connection (one worker) at 1000/s on a fake clock, 100 us
// per request unless a case says otherwise.

const stallIv = int64(time.Millisecond)

// stallAtStart makes the dispatcher oversleep request 0's start by 5 ms.
func stallAtStart(intended int64) int64 {
	if intended == 0 {
		return 5 * stallIv
	}
	return 0
}

// slowSecond makes the server take 3 ms on request 2.
func slowSecond(r *Request) time.Duration {
	if r.Seq == 2 {
		return 3 * time.Millisecond
	}
	return 100 * time.Microsecond
}

func stallConfig() *ScheduleConfig {
	return &ScheduleConfig{Rate: 1000, Duration: 10 * time.Millisecond, Workers: 1, LateAfter: 100 * time.Microsecond}
}

// A client stall with an idle server: requests 1-5 go out back to back after
// the stall, each behind the one before it; nothing of that is charged, and
// the five are counted as reclassified. None is dropped.
func TestScheduleStallIdleServerNothingCharged(t *testing.T) {
	res, reqs := runFake(t, stallConfig(), &fakeClock{stall: stallAtStart},
		func(*Request) time.Duration { return 100 * time.Microsecond })
	require.Len(t, reqs, 10)
	assert.Equal(t, int64(10), res.Started)
	assert.Equal(t, int64(10), res.ResponseHistogram.TotalCount(), "every request recorded")
	assert.InDelta(t, 100, usOf(res.Response.Max), 1)
	assert.Equal(t, int64(5), res.Reclassified, "requests 1-5 waited behind late sends")
	assert.Equal(t, int64(6), res.ClientLate)
	assert.InDelta(t, 5000, usOf(res.ClientLateness.Max), 10)
}

// A slow server with an on-time client: request 2's 3 ms queues requests
// 3-5 behind it, all charged, none reclassified.
func TestScheduleSlowServerCharged(t *testing.T) {
	res, _ := runFake(t, stallConfig(), &fakeClock{}, slowSecond)
	assert.Zero(t, res.Reclassified)
	assert.Zero(t, res.ClientLate)
	assert.InDelta(t, 3000, usOf(res.Response.Max), 1)
	// Request 3 waited 2 ms behind request 2, request 4 1.1 ms, request 5
	// 0.2 ms: 2.1, 1.2 and 0.3 ms responses.
	assert.Equal(t, int64(4), countAbove(res, 200*time.Microsecond))
}

// Both at once: the client stalls 5 ms, then the server takes 3 ms on
// request 2 of the backlog. The response times are exactly those of the same
// server with an on-time client (the queueing its 3 ms caused stays
// charged, the backlog's does not), and the reclassified requests are the
// backlog's.
func TestScheduleStallAndSlowServer(t *testing.T) {
	onTime, _ := runFake(t, stallConfig(), &fakeClock{}, slowSecond)
	both, reqs := runFake(t, stallConfig(), &fakeClock{stall: stallAtStart}, slowSecond)
	require.Len(t, reqs, 10)
	assert.Equal(t, onTime.ResponseHistogram.Export().Counts, both.ResponseHistogram.Export().Counts)
	assert.InDelta(t, 3000, usOf(both.Response.Max), 1)
	assert.Equal(t, countAbove(onTime, 200*time.Microsecond), countAbove(both, 200*time.Microsecond))
	// Requests 1-8 waited behind late sends (request 3 also behind the
	// slow request 2: 2 ms charged of its 5.2 ms wait); request 9 was on
	// time.
	assert.Equal(t, int64(8), both.Reclassified)
}

// countAbove counts the response times above d.
func countAbove(r *ScheduleResult, d time.Duration) int64 {
	var n int64
	for _, b := range r.ResponseHistogram.Distribution() {
		if b.From > int64(d) {
			n += b.Count
		}
	}
	return n
}

// The client's thread is descheduled for 3 ms between request 2's send time
// and its write (Left, the write's return, is 3 ms after Sent); the server
// answers in 100 us. Request 2 keeps its own 3.1 ms (the application saw
// it), but the requests after it are not queued behind it: the server's
// time runs from Left.
func TestScheduleStallBeforeWriteNotQueued(t *testing.T) {
	clk := &fakeClock{}
	cfg := stallConfig()
	cfg.Do = func(_ context.Context, r Request) error {
		*r.Sent = r.Start
		left := r.Start
		if r.Seq == 2 {
			left = r.Start.Add(3 * time.Millisecond)
		}
		*r.Left = left
		*r.Arrived = left.Add(100 * time.Microsecond)
		clk.advanceTo(int64(r.Arrived.Sub(fakeBase)))
		return nil
	}
	c, err := cfg.normalize()
	require.NoError(t, err)
	res, err := schedule(context.Background(), &c, clk)
	require.NoError(t, err)
	assert.InDelta(t, 3100, usOf(res.Response.Max), 1)
	assert.Equal(t, int64(1), countAbove(res, 200*time.Microsecond), "only request 2 itself")
}
