//go:build !linux

package latency

import (
	"net"
	"net/netip"
)

// pinned is linux's: elsewhere a wildcard-bound server's replies leave
// from the address the kernel's route picks.
type pinned struct{}

func pin(*net.UDPConn) *pinned { return nil }

func (*pinned) read([]byte) (int, netip.AddrPort, error) { return 0, netip.AddrPort{}, nil }
func (*pinned) write([]byte, netip.AddrPort) error       { return nil }
