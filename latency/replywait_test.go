package latency

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRTO pins the estimator to RFC 6298's rules.
func TestRTO(t *testing.T) {
	e := rto{floor: 10 * time.Millisecond, ceil: time.Second}
	assert.Equal(t, time.Second, e.timeout(), "no round trip yet: the ceiling")
	e.backoff()
	assert.Equal(t, time.Second, e.timeout())

	e.sample(40 * time.Millisecond) // srtt 40 ms, rttvar 20 ms
	assert.Equal(t, 120*time.Millisecond, e.timeout())
	e.sample(8 * time.Millisecond) // rttvar (60+32)/4 = 23 ms, srtt (280+8)/8 = 36 ms
	assert.Equal(t, 36*time.Millisecond+4*23*time.Millisecond, e.timeout())

	e.backoff()
	assert.Equal(t, 2*(36+92)*time.Millisecond, e.timeout(), "doubled after a timeout")
	for range 5 {
		e.backoff()
	}
	assert.Equal(t, time.Second, e.timeout(), "never above the ceiling")
	for range 100 {
		e.backoff()
	}
	assert.Equal(t, time.Second, e.timeout(), "no overflow however many timeouts")

	fast := rto{floor: 10 * time.Millisecond, ceil: time.Second}
	for range 20 {
		fast.sample(30 * time.Microsecond)
	}
	assert.Equal(t, 10*time.Millisecond, fast.timeout(), "microsecond round trips: the floor")
	fast.backoff()
	assert.Equal(t, 20*time.Millisecond, fast.timeout(), "the floor doubles too")
	fast.sample(30 * time.Microsecond)
	assert.Equal(t, 10*time.Millisecond, fast.timeout(), "a round trip ends the backoff")
}

// TestWaiterRing: a counted run remembers its messages (a power of two of
// them), a long one the last maxSentRing.
func TestWaiterRing(t *testing.T) {
	for count, want := range map[int64]int{1: 1, 5: 8, 8: 8, 1000: 1024, 4096: 4096, 1 << 20: 4096, 0: 4096} {
		w := newWaiter(&run{cfg: PingPongConfig{Count: count}})
		assert.Len(t, w.ring, want, "Count %d", count)
		assert.Equal(t, uint64(want-1), w.mask)
	}
}

// deadlineTransport records the deadline of every read; each read times out
// at once.
type deadlineTransport struct{ deadlines []time.Time }

func (t *deadlineTransport) write([]byte) error { return nil }
func (t *deadlineTransport) read(deadline time.Time) ([]byte, error) {
	t.deadlines = append(t.deadlines, deadline)
	return nil, os.ErrDeadlineExceeded
}
func (t *deadlineTransport) abort()             {}
func (t *deadlineTransport) close() error       { return nil }
func (t *deadlineTransport) arrived() time.Time { return time.Time{} }

// overdueAt puts message seq, sent tx after the run's base, in w's ring as a
// message whose adaptive timeout passed.
func overdueAt(w *waiter, seq uint64, tx time.Duration, in bool) {
	m := &w.ring[seq&w.mask]
	*m = sentMsg{seq: seq, tx: int64(tx), in: in, state: awaited, slot: -1}
	w.expire(m)
}

// TestWaiterDrainCap: after the last message the run waits for late
// replies until the newest overdue message's ReadTimeout, after which its
// reply would be out of order.
func TestWaiterDrainCap(t *testing.T) {
	tr := &deadlineTransport{}
	r := &run{cfg: PingPongConfig{Count: 8, ReadTimeout: time.Second, MinReadTimeout: 200 * time.Millisecond, AdaptiveTimeout: true},
		tr: tr, base: time.Now().Add(-1200 * time.Millisecond)}
	w := newWaiter(r)
	w.rto.sample(time.Millisecond)
	overdueAt(w, 1, 100*time.Millisecond, true) // past its ReadTimeout: not waited for
	overdueAt(w, 2, 400*time.Millisecond, true)
	overdueAt(w, 3, 700*time.Millisecond, true)
	require.Equal(t, time.Second, w.timeout(), "three backoffs from the 200 ms floor: the cap")

	require.NoError(t, w.drain(3))
	require.Len(t, tr.deadlines, 1)
	assert.WithinDuration(t, r.base.Add(1700*time.Millisecond), tr.deadlines[0], 0,
		"message 3's ReadTimeout, not one more timeout (1 s) from now (1.2 s)")
}

// TestWaiterAbandon: when ctx ends a run, an overdue message whose
// ReadTimeout had not passed could still have been answered: it is no
// longer dropped. One past its ReadTimeout stays dropped.
func TestWaiterAbandon(t *testing.T) {
	r := &run{cfg: PingPongConfig{Count: 8, ReadTimeout: time.Second, AdaptiveTimeout: true}}
	w := newWaiter(r)
	overdueAt(w, 1, 500*time.Millisecond, true)
	overdueAt(w, 2, 1900*time.Millisecond, true)
	overdueAt(w, 3, 2100*time.Millisecond, false) // outside the window: never counted
	overdueAt(w, 4, 2200*time.Millisecond, true)
	w.ring[5] = sentMsg{seq: 5, tx: int64(2300 * time.Millisecond), in: true, state: answered, slot: -1}
	require.Equal(t, int64(3), r.dropped)

	w.abandon(int64(2500 * time.Millisecond))
	assert.Equal(t, int64(1), r.dropped, "only message 1, sent 2 s before the end")
	assert.Equal(t, []time.Duration{-1, -1, -1}, r.samples, "empty places, which finish removes")
}

// TestWaiterDrainWaitsForReadTimeout: a reply held back past the adaptive
// timeout (10 ms here) but within ReadTimeout is late, not lost, for the
// run's last message too: the drain waits until that message's ReadTimeout,
// not one more adaptive timeout.
func TestWaiterDrainWaitsForReadTimeout(t *testing.T) {
	tr := &deadlineTransport{}
	r := &run{cfg: PingPongConfig{Count: 8, ReadTimeout: time.Second, AdaptiveTimeout: true},
		tr: tr, base: time.Now().Add(-1200 * time.Millisecond)}
	w := newWaiter(r)
	w.rto.sample(time.Millisecond)
	overdueAt(w, 1, 1190*time.Millisecond, true)
	require.Less(t, w.timeout(), 100*time.Millisecond)

	require.NoError(t, w.drain(1))
	require.Len(t, tr.deadlines, 1)
	assert.WithinDuration(t, r.base.Add(2190*time.Millisecond), tr.deadlines[0], 0,
		"message 1's ReadTimeout, not one adaptive timeout from now")
}
