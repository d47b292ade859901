//go:build !linux

package throughput

import "net"

// udpFast is the linux GSO/GRO helper; it does not exist elsewhere.
type udpFast struct{ gso, gro, stamps bool }

const udpFastAvailable = false

func newUDPFast(*net.UDPConn, bool, bool, int) (*udpFast, error) { return nil, ErrNotAvailable }

// reportLocalDrops is linux's: elsewhere a refused datagram fails its
// write without being asked (ENOBUFS on the BSDs), or goes unseen.
func reportLocalDrops(*net.UDPConn) {}

func (e *engine) recvUDPFast(*flowStream) error { return ErrNotAvailable }

func enableRxStamps(*net.UDPConn) bool { return false }

func (e *engine) recvUDPStamped(*flowStream) error { return ErrNotAvailable }
