//go:build linux

package latency

import (
	"context"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSleepSlice bounds one clock_nanosleep(2), so that a sleeping
// dispatcher notices its context's end within it. The waits given to
// kernelSleep are a few milliseconds (kernelSleepAfter): one sleep each.
const kernelSleepSlice = 20 * time.Millisecond

// monoBase and monoOffset put Go's monotonic clock on CLOCK_MONOTONIC's
// scale, which clock_nanosleep(2) takes: Go's clock is CLOCK_MONOTONIC read
// through the vDSO, so the offset, taken once, holds for the process's life
// (its error is half a system call, under a microsecond). x/sys's
// ClockGettime is a system call each time, about a microsecond on a
// paravirtualized guest: reading the clock so cost a sleep three of them
// (issue 42). monoOK is false when the kernel would not say; monoErr bounds
// the offset's error.
var (
	monoBase                    = time.Now()
	monoOffset, monoErr, monoOK = monotonicOffset()
)

func monotonicOffset() (offset, maxErr int64, ok bool) {
	var ts unix.Timespec
	before := time.Since(monoBase)
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0, 0, false
	}
	after := time.Since(monoBase)
	half := int64(after-before) / 2
	return ts.Nano() - int64(before) - half, half + 1, true
}

// monotonic is CLOCK_MONOTONIC now, in nanoseconds, without a system call.
func monotonic() int64 { return monoOffset + int64(time.Since(monoBase)) }

// kernelSleep sleeps for d in clock_nanosleep(2) on the calling thread, to
// an absolute time on the monotonic clock (Go's), with the thread's timer
// slack at 1 us: it wakes tens of microseconds after d on an idle virtual
// machine, where a Go timer fires up to about 1 ms late (the netpoller's
// wait is in milliseconds). The thread blocks in the kernel and uses no CPU
// meanwhile, so the server under test keeps the core a busy-waiting client
// would take (issue 31); one sleep a wait, not one every 100 us, keeps the
// wake-ups to one a request, and two system calls a wait (the slack and
// the sleep) keep its CPU down (issue 42). It reports false when ctx ended
// first.
//
// With raw, both are raw system calls: the thread keeps its P and the
// runtime never sees it sleep, as a plain C client sleeps. A client that
// then waits for its reply in a blocking receive (kstamp's EnableBlock)
// waits as the plain client does: over loopback at 1000/s a GET's p50 read
// 25-26 us against the plain client's 24-25, and 67-98 us when the sleep
// went through the runtime's system-call entry (issue 42). A signal (the
// runtime's preemption, the garbage collector's stop) ends the sleep at
// once (EINTR); the goroutine then yields, and sleeps the rest.
func kernelSleep(ctx context.Context, d time.Duration, raw bool) bool {
	if !monoOK {
		return timerSleep(ctx, d)
	}
	// The slack is the calling thread's; setting it each time costs one
	// system call and needs no locked thread. It never blocks.
	_, _, _ = unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1000, 0)
	end := monotonic() + int64(d)
	for {
		if ctx.Err() != nil {
			return false
		}
		now := monotonic()
		if now >= end {
			return true
		}
		target := min(end, now+int64(kernelSleepSlice))
		ts := unix.NsecToTimespec(target)
		switch err := clockNanosleep(&ts, raw); err {
		case 0:
			if target == end {
				return true // the kernel wakes a sleep to an absolute time at or after it
			}
		case unix.EINTR: // a signal: the loop sleeps the rest
			if raw {
				runtime.Gosched()
			}
		default:
			return timerSleep(ctx, time.Duration(end-monotonic()))
		}
	}
}

// clockNanosleep sleeps to ts on the monotonic clock, through the runtime's
// system-call entry or, with raw, as a raw system call.
func clockNanosleep(ts *unix.Timespec, raw bool) unix.Errno {
	call := unix.Syscall6
	if raw {
		call = unix.RawSyscall6
	}
	_, _, errno := call(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return errno
}
