package throughput

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// lowatSpan is how much of the stream's current rate a reader lets
	// queue before it wakes: a wake-up then reads at least that much, and
	// an interval report misses at most that much time's data.
	lowatSpan = time.Millisecond
	// maxLowat caps the wake-up threshold at one default read.
	maxLowat = defaultReadLen
	// lowatEvery is how often the rate is re-measured. A read that waited
	// long (the rate fell) re-measures at once, so a threshold holds data
	// back for at most one wait.
	lowatEvery = 10 * time.Millisecond
)

// lowat adapts a TCP receiver's SO_RCVLOWAT to its stream's rate, so that a
// fast stream wakes its goroutine once per read's worth of data instead of
// once per arriving segment: the Go runtime's park and wake-up then cost
// per 128 KiB, not per 64 KiB or less. A stock iperf3 3.12 client into our
// server got 1.1x the goodput at 0.9x the CPU per byte with it
// (docs/benchmarks.md). It stays off where a threshold could hold data
// back for long: a paced sender, or a fixed window (SO_RCVBUF), which the
// kernel does not grow to fit the threshold.
type lowat struct {
	conn    syscall.Conn
	off     *atomic.Bool // the test is ending: back to 1 and stay there
	cur     int
	last    time.Time
	lastN   int64
	enabled bool
}

func newLowat(conn net.Conn, c *Config, off *atomic.Bool) *lowat {
	sc, tcp := tcpSocket(conn)
	return &lowat{conn: sc, off: off, cur: 1, enabled: tcp && rate(c) == 0 && c.Window == 0}
}

// adapt sets the threshold to lowatSpan of the rate seen over the last
// lowatEvery or more (total is the stream's bytes so far), when it moved
// by more than 2x.
func (l *lowat) adapt(now time.Time, total int64) {
	if !l.enabled {
		return
	}
	if l.last.IsZero() {
		l.last, l.lastN = now, total
		return
	}
	el := now.Sub(l.last)
	if el < lowatEvery {
		return
	}
	want := int(float64(total-l.lastN) * float64(lowatSpan) / float64(el))
	want = min(max(want, 1), maxLowat)
	l.last, l.lastN = now, total
	if want > 2*l.cur || 2*want < l.cur {
		l.set(want)
	}
}

// set applies n unless the test is ending; like deadline.refreshAt it
// checks the flag after its write, so a concurrent end always wins.
func (l *lowat) set(n int) {
	if l.off.Load() {
		return
	}
	if setRcvLowat(l.conn, n) != nil {
		l.enabled = false
		return
	}
	l.cur = n
	if l.off.Load() {
		_ = setRcvLowat(l.conn, 1)
		l.cur = 1
	}
}

// endLowat puts every receiving TCP stream's threshold back to one byte
// (which wakes its reader), so that the data queued when the test ends is
// read and counted.
func (e *engine) endLowat() {
	e.lowatOff.Store(true)
	for _, s := range e.streams {
		if sc, tcp := tcpSocket(s.conn); tcp && !s.send {
			_ = setRcvLowat(sc, 1)
		}
	}
}
