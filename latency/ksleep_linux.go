//go:build linux

package latency

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// kernelSleepSlice bounds one clock_nanosleep(2), so that a sleeping
// dispatcher notices its context's end within it. The waits given to
// kernelSleep are a few milliseconds (kernelSleepAfter): one sleep each.
const kernelSleepSlice = 20 * time.Millisecond

// kernelSleep sleeps for d in clock_nanosleep(2) on the calling thread, to
// an absolute time on the monotonic clock (Go's), with the thread's timer
// slack at 1 us: it wakes tens of microseconds after d on an idle virtual
// machine, where a Go timer fires up to about 1 ms late (the netpoller's
// wait is in milliseconds). The thread blocks in the kernel and uses no CPU
// meanwhile, so the server under test keeps the core a busy-waiting client
// would take (issue 31); one sleep a wait, not one every 100 us, keeps the
// wake-ups to one a request (issue 42). It reports false when ctx ended
// first.
func kernelSleep(ctx context.Context, d time.Duration) bool {
	// The slack is the calling thread's; setting it each time costs one
	// cheap system call and needs no locked thread.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		return timerSleep(ctx, d)
	}
	end := now.Nano() + int64(d)
	for {
		if ctx.Err() != nil {
			return false
		}
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
			return true // no clock to sleep by: the wait is over
		}
		if now.Nano() >= end {
			return true
		}
		ts := unix.NsecToTimespec(min(end, now.Nano()+int64(kernelSleepSlice)))
		_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) // EINTR: the loop sleeps the rest
	}
}
