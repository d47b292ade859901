//go:build linux

package cache

import (
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where the fields a connect's cause needs sit in struct tcp_info, and how
// far the kernel must fill it for each to be known: x/sys's
// GetsockoptTCPInfo throws the returned length away, so on a kernel before
// 6.7 tcpi_total_rto would read 0 where the kernel said nothing.
var (
	tcpiRTTEnd     = unsafe.Offsetof(unix.TCPInfo{}.Rtt) + unsafe.Sizeof(unix.TCPInfo{}.Rtt)
	tcpiRetransEnd = unsafe.Offsetof(unix.TCPInfo{}.Total_retrans) + unsafe.Sizeof(unix.TCPInfo{}.Total_retrans)
	tcpiRTOEnd     = unsafe.Offsetof(unix.TCPInfo{}.Total_rto) + unsafe.Sizeof(unix.TCPInfo{}.Total_rto)
)

// readTCPInfo reads the TCP_INFO of nc's socket with getsockopt(2), keeping
// the length the kernel returned. ok is false when nc has no socket of its
// own to ask (a pipe, a wrapped connection) or the kernel refused.
func readTCPInfo(nc net.Conn) (ti tcpInfo, ok bool) {
	sc, isSys := nc.(syscall.Conn)
	if !isSys {
		return ti, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ti, false
	}
	var (
		raw   unix.TCPInfo
		size  = uint32(unsafe.Sizeof(raw))
		errno syscall.Errno
	)
	if rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_INFO,
			uintptr(unsafe.Pointer(&raw)), uintptr(unsafe.Pointer(&size)), 0)
	}) != nil || errno != 0 {
		return ti, false
	}
	ti.size = int(size)
	n := uintptr(size)
	if n >= tcpiRTTEnd {
		ti.rtt = time.Duration(raw.Rtt) * time.Microsecond
	}
	if n >= tcpiRetransEnd {
		ti.retrans, ti.hasRetrans = raw.Total_retrans, true
	}
	if n >= tcpiRTOEnd {
		ti.rto, ti.hasRTO = uint32(raw.Total_rto), true
	}
	return ti, true
}
