//go:build linux

package latency

import (
	"context"
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
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond, kernelSleepSlice + 5*time.Millisecond} {
		start := kernelMonotonic(t)
		require.True(t, kernelSleep(context.Background(), d), d)
		assert.GreaterOrEqual(t, kernelMonotonic(t)-start, int64(d)-monoErr, d)
	}
}

// TestKernelSleepCanceled: a context that ends ends the sleep, before it
// starts or within it.
func TestKernelSleepCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, kernelSleep(ctx, time.Hour))

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- kernelSleep(ctx, time.Hour) }()
	time.Sleep(2 * kernelSleepSlice)
	cancel()
	select {
	case ok := <-done:
		assert.False(t, ok)
	case <-time.After(time.Minute):
		t.Fatal("kernelSleep did not return after its context ended")
	}
}
