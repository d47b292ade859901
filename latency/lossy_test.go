package latency_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
)

// impairEvery starts a UDP server that drops, or holds back by delay, the
// reply to every k-th measured message (warm-up messages get no reply);
// impaired returns the indexes of those messages.
func impairEvery(t *testing.T, k int, delay time.Duration) (addr string, impaired func() []int) {
	t.Helper()
	var mu sync.Mutex
	var n int
	var idx []int
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp", Impair: func(uint64) (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		if n++; n%k != 0 {
			return 0, false
		}
		idx = append(idx, n-1)
		return delay, delay == 0
	}})
	return srv.Addr, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(idx)
	}
}

// TestPingPongAdaptiveTimeoutLoss: every tenth reply is lost. With the
// adaptive timeout each loss costs a few round trips (10 ms, the floor),
// not ReadTimeout, and every other message is measured. ReadTimeout is
// long (10 s) so that the bound tells the two apart on any machine: 30
// losses at ReadTimeout would take 300 s, and even a loaded machine's
// round trips keep the adaptive timeout far below it.
func TestPingPongAdaptiveTimeoutLoss(t *testing.T) {
	addr, _ := impairEvery(t, 10, 0)
	start := time.Now()
	res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
		Count: 300, ReadTimeout: 10 * time.Second, AdaptiveTimeout: true,
	})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 100*time.Second, "30 losses at ReadTimeout (10 s) each would take 300 s")
	assert.Equal(t, int64(300), res.Sent)
	assert.Equal(t, int64(30), res.Dropped)
	assert.Equal(t, int64(270), res.Observations)
	assert.Len(t, res.Samples, 270)
	// A reply that a busy machine holds past the 10 ms floor is late, not
	// lost: it is one of the 270 measured, so LateReplies is not asserted.
}

// TestPingPongAdaptiveTimeoutLateReplies: every tenth reply is held back
// 200 ms, beyond the adaptive timeout (10 ms after loopback round trips;
// a loaded machine's stalls of tens of milliseconds stay below the hold)
// but well within ReadTimeout. Those replies are late, not lost: each is
// matched to its own message by sequence number and its whole round trip
// is recorded at its place.
func TestPingPongAdaptiveTimeoutLateReplies(t *testing.T) {
	const delay = 200 * time.Millisecond
	addr, held := impairEvery(t, 10, delay)
	res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
		Count: 100, ReadTimeout: 5 * time.Second, AdaptiveTimeout: true,
	})
	require.NoError(t, err)
	assert.Zero(t, res.Dropped)
	assert.Zero(t, res.OutOfOrder)
	assert.Positive(t, res.LateReplies, "the timeout is at most 10 ms after a run of loopback round trips")
	require.Len(t, res.Samples, 100)
	require.Len(t, held(), 10)
	for _, i := range held() {
		assert.GreaterOrEqual(t, res.Samples[i], delay, "message %d: its own reply, %v", i, res.Samples[i])
	}
	assert.GreaterOrEqual(t, usOf(res.Max), float64(delay.Microseconds()), "late round trips reach the histogram")
}

// TestPingPongAdaptiveTimeoutTooLate: a reply held back beyond ReadTimeout
// is lost, as without the adaptive timeout, and never matched to another
// message.
func TestPingPongAdaptiveTimeoutTooLate(t *testing.T) {
	addr, _ := impairEvery(t, 5, 300*time.Millisecond)
	res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
		Count: 20, ReadTimeout: 100 * time.Millisecond, MinReadTimeout: 5 * time.Millisecond, AdaptiveTimeout: true,
	})
	require.NoError(t, err)
	// The four held replies are lost; a loaded machine can lose more (a
	// round trip it stalls past ReadTimeout), or make others late.
	assert.GreaterOrEqual(t, res.Dropped, int64(4))
	assert.Equal(t, int64(20), res.Observations+res.Dropped)
	assert.LessOrEqual(t, res.LateReplies, res.Observations)
	for _, d := range res.Samples {
		assert.Less(t, d, 300*time.Millisecond, "a reply held back 300 ms is no message's")
	}
}

// impairFrom starts a UDP server whose Impair gets the index (from 1) of
// each measured message it answers.
func impairFrom(t *testing.T, impair func(n int64) (time.Duration, bool)) string {
	t.Helper()
	var n atomic.Int64
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp", Impair: func(uint64) (time.Duration, bool) {
		return impair(n.Add(1))
	}})
	return srv.Addr
}

// TestPingPongAdaptiveTimeoutFinalWaitUntimed: the last reply is held back
// 1 s, past its timeout (400 ms, the floor, which a loaded machine's
// round trips do not raise past 1 s) and into the final wait (one more
// timeout, doubled: until 3x the timeout), which records it. The run's
// time is its messages': it ends at the last message's timeout, before
// that reply came, and the rate is of the messages, not of the wait.
func TestPingPongAdaptiveTimeoutFinalWaitUntimed(t *testing.T) {
	const count, delay = 20, time.Second
	addr := impairFrom(t, func(n int64) (time.Duration, bool) {
		if n == count {
			return delay, false
		}
		return 0, false
	})
	res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
		Count: count, ReadTimeout: 5 * time.Second, MinReadTimeout: 400 * time.Millisecond, AdaptiveTimeout: true,
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.LateReplies, "the final wait (one more timeout, 800 ms) records it")
	assert.Zero(t, res.Dropped)
	require.Len(t, res.Samples, count)
	last := res.Samples[count-1]
	assert.GreaterOrEqual(t, last, delay)
	assert.Less(t, res.RunTime.Seconds(), last.Seconds(), "the run ended before the last reply came")
	assert.InEpsilon(t, count/res.RunTime.Seconds(), res.AchievedMPS, 1e-9)
	assert.InDelta(t, res.RunTime.Seconds(), res.ValidTime.Seconds(), 1e-9, "a counted run: the whole run is the window")
}

// TestPingPongAdaptiveTimeoutCancelled: replies stop after the 20th message
// and ctx ends while the 24th is awaited. Messages 21 to 23, past their
// adaptive timeout, were still within ReadTimeout: their replies could
// have come, so, like the 24th, they are neither dropped nor recorded.
func TestPingPongAdaptiveTimeoutCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := impairFrom(t, func(n int64) (time.Duration, bool) {
		if n == 24 {
			cancel()
		}
		return 0, n > 20
	})
	res, err := latency.PingPong(ctx, addr, &latency.PingPongConfig{
		Count: 100, ReadTimeout: 5 * time.Second, AdaptiveTimeout: true,
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	// The 25th may go out before the cancel lands, on a loaded machine
	// that runs the cancelling server late.
	assert.GreaterOrEqual(t, res.Sent, int64(24))
	assert.Equal(t, int64(20), res.Observations)
	assert.Len(t, res.Samples, 20)
	assert.Zero(t, res.Dropped, "no message waited its whole ReadTimeout (5 s) in vain")
	// A reply to one of the first 20 that a loaded machine held past its
	// adaptive timeout is late and recorded; none of 21-24 is.
	assert.LessOrEqual(t, res.LateReplies, res.Observations)
}
