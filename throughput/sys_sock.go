//go:build unix || windows

package throughput

import (
	"net"
	"syscall"
)

func sockaddr(a *net.UDPAddr) syscall.Sockaddr {
	if ip4 := a.IP.To4(); ip4 != nil {
		sa := &syscall.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], ip4)
		return sa
	}
	sa := &syscall.SockaddrInet6{Port: a.Port}
	copy(sa.Addr[:], a.IP.To16())
	return sa
}
