package main

import (
	"sync"
	"time"
)

// byteBudget caps the bytes throughput probes may send in any sliding hour,
// all peers together, so a mesh of agents cannot saturate the links it
// measures. A probe reserves its largest possible size before it starts and
// gives back what it did not send. It is safe for concurrent use.
type byteBudget struct {
	limit  int64 // bytes per hour; 0 allows nothing
	window time.Duration
	now    func() time.Time // clock seam for tests

	mu      sync.Mutex
	entries []*spend // oldest first
	used    int64    // sum of entries
}

type spend struct {
	at time.Time
	n  int64
}

func newByteBudget(perHour int64) *byteBudget {
	return &byteBudget{limit: perHour, window: time.Hour, now: time.Now}
}

// reserve takes n (> 0) bytes from the budget if the last hour's spending
// leaves room for them. It returns the reservation, or nil when it did not.
func (b *byteBudget) reserve(n int64) *spend {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.expire(now)
	if b.used+n > b.limit {
		return nil
	}
	s := &spend{now, n}
	b.entries = append(b.entries, s)
	b.used += n
	return s
}

// settle records that the reservation s spent sent bytes: what it did not
// send goes back to the budget, and an overshoot (a probe ends on a block
// boundary) is charged. A reservation that expired already is left alone.
func (b *byteBudget) settle(s *spend, sent int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sent = max(sent, 0)
	for _, e := range b.entries {
		if e == s {
			b.used += sent - e.n
			e.n = sent
			return
		}
	}
}

// remaining is what could be reserved now.
func (b *byteBudget) remaining() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(b.now())
	return b.limit - b.used
}

func (b *byteBudget) expire(now time.Time) {
	i := 0
	for i < len(b.entries) && now.Sub(b.entries[i].at) >= b.window {
		b.used -= b.entries[i].n
		i++
	}
	if i > 0 {
		b.entries = append(b.entries[:0], b.entries[i:]...)
	}
}
