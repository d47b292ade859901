//go:build linux

package throughput

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// fakeFlow is a socket read by spinWait on a clock it owns: each read
// advances the clock by step and finds a batch when one is due.
type fakeFlow struct {
	clock time.Time
	step  time.Duration
	due   []time.Time // batches' arrival times, in order
	reads int
}

func (f *fakeFlow) now() time.Time { return f.clock }

func (f *fakeFlow) read() (uintptr, syscall.Errno) {
	f.reads++
	f.clock = f.clock.Add(f.step)
	if len(f.due) > 0 && !f.clock.Before(f.due[0]) {
		f.due = f.due[1:]
		return 1400, 0
	}
	return 0, unix.EAGAIN
}

// sleep is the caller's wait in poll(2): until the next batch, or d when
// none comes.
func (f *fakeFlow) sleep(d time.Duration) {
	if len(f.due) > 0 && f.due[0].Before(f.clock.Add(d)) {
		f.clock = f.due[0]
		return
	}
	f.clock = f.clock.Add(d)
}

func TestSpinWait(t *testing.T) {
	t0 := time.Unix(1000, 0)
	f := &fakeFlow{clock: t0, step: time.Microsecond}
	w := &spinWait{now: f.now}

	// A reader that never waited does not spin: the first EAGAIN goes to
	// poll(2) after one read.
	_, errno := w.try(f.read)
	assert.Equal(t, unix.EAGAIN, errno)
	assert.Equal(t, 1, f.reads)

	// A wait shorter than spinResume makes the flow dense: the next empty
	// try spins and catches a batch 10 us later without waiting.
	f.due = []time.Time{f.clock.Add(5 * time.Microsecond)}
	f.sleep(time.Second)
	_, errno = w.try(f.read)
	assert.Equal(t, syscall.Errno(0), errno)
	f.due, f.reads = []time.Time{f.clock.Add(10 * time.Microsecond)}, 0
	_, errno = w.try(f.read)
	assert.Equal(t, syscall.Errno(0), errno, "a dense flow's next batch, 10 us away, is caught by the spin")
	assert.Equal(t, 10, f.reads)

	// A batch further away than spinFor: the spin ends empty after spinFor
	// and the reader goes to poll(2).
	f.due, f.reads = []time.Time{f.clock.Add(time.Millisecond)}, 0
	start := f.clock
	_, errno = w.try(f.read)
	assert.Equal(t, unix.EAGAIN, errno)
	assert.Equal(t, spinFor+time.Microsecond, f.clock.Sub(start), "one read, then spinFor of spinning")

	// That wait was long (1 ms): the flow is sparse, so the next empty try
	// goes to poll(2) at once, and so does every one after a long wait.
	f.sleep(time.Second)
	_, errno = w.try(f.read)
	assert.Equal(t, syscall.Errno(0), errno)
	for range 3 {
		f.due, f.reads = []time.Time{f.clock.Add(time.Millisecond)}, 0
		_, errno = w.try(f.read)
		assert.Equal(t, unix.EAGAIN, errno)
		assert.Equal(t, 1, f.reads, "a sparse flow does not spin")
		f.sleep(time.Second)
		_, errno = w.try(f.read)
		assert.Equal(t, syscall.Errno(0), errno)
	}

	// Another error ends the try at once, spinning or not.
	w.spinning = true
	f.reads = 0
	_, errno = w.try(func() (uintptr, syscall.Errno) { f.reads++; return 0, unix.ECONNREFUSED })
	assert.Equal(t, unix.ECONNREFUSED, errno)
	assert.Equal(t, 1, f.reads)
}
