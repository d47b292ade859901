//go:build linux

package latency

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// kernelMonotonic reads CLOCK_MONOTONIC through the system call.
func kernelMonotonic(t *testing.T) int64 {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts))
	return ts.Nano()
}

// TestMonotonicIsTheKernelClock: the vDSO-read clock kernelSleep sleeps by
// is the kernel's CLOCK_MONOTONIC, within the offset's stated error.
func TestMonotonicIsTheKernelClock(t *testing.T) {
	require.True(t, monoOK)
	for range 100 {
		before := monotonic()
		k := kernelMonotonic(t)
		after := monotonic()
		require.GreaterOrEqual(t, k, before-monoErr)
		require.LessOrEqual(t, k, after+monoErr)
	}
}

// TestKernelSleepSleepsToTheEnd: a sleep ends at or after its end on the
// kernel's clock, including one longer than a slice.
func TestKernelSleepSleepsToTheEnd(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond, kernelSleepSlice + 5*time.Millisecond} {
			start := kernelMonotonic(t)
			require.True(t, kernelSleep(context.Background(), d, raw), "%v raw %v", d, raw)
			assert.GreaterOrEqual(t, kernelMonotonic(t)-start, int64(d)-monoErr, "%v raw %v", d, raw)
		}
	}
}

// TestKernelSleepRawSleepsThroughSignals: the signals a raw sleep takes
// (the collector's stop of every goroutine preempts it) interrupt it, and
// it sleeps on to its end: collections finish, the sleep does not.
func TestKernelSleepRawSleepsThroughSignals(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a raw sleep is used only with another P")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- kernelSleep(ctx, time.Hour, true) }()
	time.Sleep(2 * kernelSleepSlice) // asleep by now
	for range 3 {
		runtime.GC()
	}
	select {
	case <-done:
		t.Fatal("the sleep ended before its context did")
	default:
	}
	cancel()
	select {
	case ok := <-done:
		assert.False(t, ok)
	case <-time.After(time.Minute):
		t.Fatal("kernelSleep did not return after its context ended")
	}
}

// TestKernelSleepCanceled: a context that ends ends the sleep, before it
// starts or within it.
func TestKernelSleepCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, kernelSleep(ctx, time.Hour, false))

	for _, raw := range []bool{false, true} {
		ctx, cancel = context.WithCancel(context.Background())
		done := make(chan bool, 1)
		go func() { done <- kernelSleep(ctx, time.Hour, raw) }()
		time.Sleep(2 * kernelSleepSlice)
		cancel()
		select {
		case ok := <-done:
			assert.False(t, ok, "raw %v", raw)
		case <-time.After(time.Minute):
			t.Fatalf("kernelSleep (raw %v) did not return after its context ended", raw)
		}
	}
}
