package latency

import (
	"runtime"
	"time"
)

// yieldEvery is a yielder's period, well inside the 10 ms after which the
// runtime's monitor preempts a goroutine.
const yieldEvery = 5 * time.Millisecond

// yielder passes a goroutine that makes only raw or blocking system calls
// (a sleeping sender, a raw clock, the raw echo server) through the
// scheduler once every yieldEvery. Such a goroutine never passes through
// it by itself, so the runtime's monitor preempts it after 10 ms: a
// signal, its P taken in its next system call, the monitor polling every
// 20 us for a while, and a wake-up of the process's idle thread, which
// spins on a CPU for tens of microseconds at a moment the caller does not
// choose (issue 42). A yield of its own, at a moment the caller chooses,
// costs a hand-off of the P instead.
type yielder struct {
	last int64 // when it last yielded, on the caller's clock, in ns
}

// at yields when yieldEvery has passed since the last yield, now being
// the caller's clock in ns, and reports whether it did.
func (y *yielder) at(now int64) bool {
	if now-y.last < int64(yieldEvery) {
		return false
	}
	runtime.Gosched()
	y.last = now
	return true
}
