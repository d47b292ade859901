//go:build linux

package latency

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// kernelSleepSlice bounds one nanosleep(2), so that a sleeping dispatcher
// notices its context's end within it.
const kernelSleepSlice = 100 * time.Microsecond

// kernelSleep sleeps for d in nanosleep(2) on the calling thread, with the
// thread's timer slack at 1 us: it wakes tens of microseconds after d on an
// idle virtual machine, where a Go timer fires up to about 1 ms late (the
// netpoller's wait is in milliseconds). The thread blocks in the kernel and
// uses no CPU meanwhile, so the server under test keeps the core a
// busy-waiting client would take (issue 31). It reports false when ctx
// ended first.
func kernelSleep(ctx context.Context, d time.Duration) bool {
	// The slack is the calling thread's; setting it each time costs one
	// cheap system call and needs no locked thread.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	end := time.Now().Add(d)
	for {
		if ctx.Err() != nil {
			return false
		}
		left := time.Until(end)
		if left <= 0 {
			return true
		}
		ts := unix.NsecToTimespec(int64(min(left, kernelSleepSlice)))
		_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}
