//go:build !linux

package latency

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// kernelTransport is Go's netpoller outside linux, which has no spinning
// receive path.
func kernelTransport(conn net.Conn, buf []byte, c *PingPongConfig) (transport, error) {
	if c.Spin > 0 {
		return nil, fmt.Errorf("latency: PingPongConfig.Spin: %w: the spinning receive path is linux's (%s/%s)", errors.ErrUnsupported, runtime.GOOS, runtime.GOARCH)
	}
	return newNetTransport(conn, buf, c), nil
}
