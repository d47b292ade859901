//go:build !linux

package throughput

import "net"

// udpFast is the linux GSO/GRO helper; it does not exist elsewhere.
type udpFast struct{ gso, gro bool }

const udpFastAvailable = false

func newUDPFast(*net.UDPConn, bool, bool, int) (*udpFast, error) { return nil, ErrNotAvailable }

func (e *engine) recvUDPFast(*flowStream) error { return ErrNotAvailable }
