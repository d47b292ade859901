//go:build linux

package latency

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the test process's CPU time, user and system.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
