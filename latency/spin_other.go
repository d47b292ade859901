//go:build !linux

package latency

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

func dialSpin(ctx context.Context, network, addr string, maxMsg int, timeout, spin time.Duration, kernelTX bool) (transport, error) {
	return nil, fmt.Errorf("%w (%s/%s)", ErrSpinUnsupported, runtime.GOOS, runtime.GOARCH)
}
