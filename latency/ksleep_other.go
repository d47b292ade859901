//go:build !linux

package latency

import (
	"context"
	"time"
)

// kernelSleep sleeps on a Go timer where no precise kernel sleep is wired
// up: it wakes up to about 1 ms late, which the schedule's StartLateness
// shows and its response times leave out.
func kernelSleep(ctx context.Context, d time.Duration, _ bool) bool { return timerSleep(ctx, d) }
