//go:build unix

package throughput

import (
	"net"
	"syscall"
)

// reuseAddr sets SO_REUSEADDR so UDP stream sockets can share the server port.
func reuseAddr(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
}

// connectFD connects a bound UDP socket to its peer behind the net package's
// back, as iperf3's server does, so the kernel steers that peer's datagrams
// to it.
func connectFD(fd uintptr, a *net.UDPAddr) error {
	return syscall.Connect(int(fd), sockaddr(a))
}
