//go:build !linux

package latency

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

func dialSpin(ctx context.Context, network, addr string, maxMsg int, timeout, spin time.Duration) (transport, error) {
	return nil, fmt.Errorf("%w (%s/%s)", ErrSpinUnsupported, runtime.GOOS, runtime.GOARCH)
}

// kernelSleepOK is false: the schedule's dispatcher uses its timer and
// busy-wait.
const kernelSleepOK = false

func kernelSleep(d time.Duration) { time.Sleep(d) }
