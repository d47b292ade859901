package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindToDevice is a net.ListenConfig.Control that sets SO_BINDTODEVICE
// (--bind-dev, -B addr%dev) on the server's listening socket.
func bindToDevice(dev string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, dev)
		}); err != nil {
			return err
		}
		return serr
	}
}
