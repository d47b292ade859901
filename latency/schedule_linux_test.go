package latency

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpuTime is the process's user and system time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// With several workers the dispatcher sleeps in the kernel to each start
// instead of busy-waiting (which held the workers' reply wake-ups back
// until its next send): a 1000/s schedule of requests that cost nothing
// uses a small part of a core, where one busy-waiting worker uses all of
// one.
func TestScheduleSeveralWorkersDoNotSpin(t *testing.T) {
	run := func(workers int) (cpu time.Duration, res *ScheduleResult) {
		before := cpuTime(t)
		res, err := Schedule(context.Background(), &ScheduleConfig{
			Rate: 1000, Workers: workers, Duration: 300 * time.Millisecond,
			Do: func(context.Context, Request) error { return nil },
		})
		require.NoError(t, err)
		return cpuTime(t) - before, res
	}
	spinning, _ := run(1)
	sleeping, res := run(4)
	t.Logf("CPU for 300 ms at 1000/s: 1 worker %v, 4 workers %v; start lateness p50 %v", spinning, sleeping, res.StartLateness.P50)
	assert.Less(t, sleeping, spinning/2, "one worker busy-waits on the dispatcher's thread; with several the dispatcher sleeps")
	assert.EqualValues(t, 300, res.Started)
}
