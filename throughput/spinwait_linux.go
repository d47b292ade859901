//go:build linux

package throughput

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of spinWait: a reader spins at most spinFor for the next batch,
// and starts spinning again after a wait in poll(2) shorter than
// spinResume.
const (
	spinFor    = 20 * time.Microsecond
	spinResume = 30 * time.Microsecond
)

// spinWait is how an unlimited UDP receiver (the GRO path) waits for its
// next batch while batches come faster than a thread sleeps and wakes.
// Each wait in poll(2) makes the sender's CPU wake the receiver's, which
// on loopback is the CPU that also delivers the datagrams: a receiver that
// drained its queue and slept after every batch cost stock iperf3 3.21's
// sender a sixth of its rate (50 against 60 Gbit/s into iperf3's server,
// which never sleeps). So a try that finds nothing is repeated for up to
// spinFor while the flow is dense, and the flow counts as dense again after
// a wait shorter than spinResume; a spin that ends empty sends the reader
// to poll(2). A sparse flow (a slower link) thus costs at most one failed
// spin per wait that began dense, never a core.
type spinWait struct {
	spinning bool
	waited   time.Time // when the reader last went to poll(2); zero when it has not since
	now      func() time.Time
}

func newSpinWait() *spinWait { return &spinWait{now: time.Now} }

// try calls read, which must not block, until it returns something other
// than EAGAIN or the spin ends: EAGAIN then means the caller waits in
// poll(2) and calls try again when it returns.
func (w *spinWait) try(read func() (uintptr, syscall.Errno)) (uintptr, syscall.Errno) {
	if !w.waited.IsZero() {
		w.spinning = w.now().Sub(w.waited) < spinResume
		w.waited = time.Time{}
	}
	n, errno := read()
	if errno == unix.EAGAIN && w.spinning {
		for end := w.now().Add(spinFor); errno == unix.EAGAIN && w.now().Before(end); {
			n, errno = read()
		}
	}
	if errno == unix.EAGAIN {
		w.spinning = false
		w.waited = w.now()
	}
	return n, errno
}
