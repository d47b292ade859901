package latency

import (
	"context"
	"time"
)

// timerSleep sleeps for d on a Go timer; false when ctx ended first.
func timerSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
