package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
