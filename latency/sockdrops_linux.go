//go:build linux

package latency

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketDrops reads the kernel's drop counter of c's socket (SO_MEMINFO's
// SK_MEMINFO_DROPS): the datagrams it dropped on the way into the socket,
// mostly for a full receive buffer. ok is false, with why, when it cannot.
func socketDrops(c net.Conn) (n int64, why string) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, "the connection has no socket"
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Sprintf("the socket could not be read: %v", err)
	}
	var (
		mem  [unix.SK_MEMINFO_VARS]uint32
		serr error
	)
	err = raw.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(mem))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&size)), 0)
		if e != 0 {
			serr = e
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, fmt.Sprintf("SO_MEMINFO could not be read: %v", err)
	}
	return int64(mem[unix.SK_MEMINFO_DROPS]), ""
}
