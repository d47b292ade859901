//go:build !linux

package cache

import (
	"context"
	"net"
	"time"
)

// rawAddr is linux's own connect path (dialraw_linux.go); elsewhere the
// resp engine dials with net.Dialer.
type rawAddr struct{ addr string }

func newRawAddr(string) *rawAddr { return nil }

func (*rawAddr) dial(context.Context, time.Time) (net.Conn, func() bool, error) {
	return nil, nil, net.ErrClosed
}
