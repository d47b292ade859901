//go:build !linux

package throughput

import "net"

// udpFast is the linux GSO/GRO helper; it does not exist elsewhere.
type udpFast struct{}

const udpFastAvailable = false

func newUDPFast(*net.UDPConn, bool, int) (*udpFast, error) { return nil, errNotAvailable }

// Never called: flowStream.fast is always nil off linux.
func (e *engine) sendUDPFast(*flowStream) error { return errNotAvailable }

func (e *engine) recvUDPFast(*flowStream) error { return errNotAvailable }
