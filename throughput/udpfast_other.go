//go:build !linux

package throughput

import "net"

// udpFast is the linux GSO/GRO helper; it does not exist elsewhere.
type udpFast struct{ gso, gro bool }

const udpFastAvailable = false

func newUDPFast(*net.UDPConn, bool, int) (*udpFast, error) { return nil, ErrNotAvailable }

// Off linux flowStream.fast is always nil; this keeps the plain path.
func (e *engine) sendUDPFast(s *flowStream) error { return e.sendUDPPlain(s) }

func (e *engine) recvUDPFast(*flowStream) error { return ErrNotAvailable }
