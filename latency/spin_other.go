//go:build !linux

package latency

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
)

// kernelTransport is Go's netpoller outside linux, which has no spinning
// receive path.
func kernelTransport(conn net.Conn, buf []byte, c *PingPongConfig) (transport, error) {
	if c.Spin > 0 {
		return nil, fmt.Errorf("latency: PingPongConfig.Spin: %w: the spinning receive path is linux's (%s/%s)", errors.ErrUnsupported, runtime.GOOS, runtime.GOARCH)
	}
	return newNetTransport(conn, buf, c), nil
}

// preciseTimers does nothing where the run's waits are Go's timers.
func preciseTimers() (restore func()) { return func() {} }

// threadCPU is zero where a thread's CPU time is not read.
func threadCPU() time.Duration { return 0 }
