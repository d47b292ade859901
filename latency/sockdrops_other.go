//go:build !linux

package latency

import (
	"net"
	"runtime"
)

// socketDrops says why there is no socket drop counter here.
func socketDrops(net.Conn) (int64, string) {
	return 0, "no socket drop counter on " + runtime.GOOS
}
