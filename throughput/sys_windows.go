//go:build windows

package throughput

import (
	"net"
	"syscall"
)

func setBufs(fd uintptr, n int) error {
	h := syscall.Handle(fd)
	if err := syscall.SetsockoptInt(h, syscall.SOL_SOCKET, syscall.SO_SNDBUF, n); err != nil {
		return err
	}
	return syscall.SetsockoptInt(h, syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}

func reuseAddr(fd uintptr) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
}

func connectFD(fd uintptr, a *net.UDPAddr) error {
	return syscall.Connect(syscall.Handle(fd), sockaddr(a))
}
