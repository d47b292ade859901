//go:build linux

package throughput

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// limitsEnd is how much of struct tcp_info a kernel must return for the
// limit counters: up to tcpi_bytes_retrans (linux 4.19; busy, rwnd and
// sndbuf limited time came in 4.10, bytes sent and retransmitted in 4.19).
var limitsEnd = unsafe.Offsetof(unix.TCPInfo{}.Bytes_retrans) + unsafe.Sizeof(unix.TCPInfo{}.Bytes_retrans)

// getTCPInfo reads TCP_INFO from fd and returns how many bytes of it the
// kernel filled in: an older kernel fills a shorter struct and leaves the
// newer counters zero, which must read as unknown, not as zero.
func getTCPInfo(fd int) (*unix.TCPInfo, uintptr, error) {
	var ti unix.TCPInfo
	n := uint32(unsafe.Sizeof(ti))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(&ti)), uintptr(unsafe.Pointer(&n)), 0)
	if errno == unix.ENOSYS {
		// 32-bit x86 before linux 4.3 has getsockopt only through
		// socketcall, which x/sys uses; its length is not returned, so
		// the limits stay unknown there.
		p, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return p, 0, err
	}
	if errno != 0 {
		return nil, 0, errno
	}
	return &ti, uintptr(n), nil
}

// limitsOf is the limit counters of ti, read at at; n is how many bytes of
// ti the kernel filled in.
func limitsOf(ti *unix.TCPInfo, n uintptr, at time.Time) limitSample {
	if n < limitsEnd {
		return limitSample{}
	}
	us := func(v uint64) time.Duration { return time.Duration(min(v, 1<<62/1000)) * time.Microsecond }
	return limitSample{ok: true, at: at, busy: us(ti.Busy_time), rwnd: us(ti.Rwnd_limited), sndbuf: us(ti.Sndbuf_limited),
		sent: ti.Bytes_sent, retrans: ti.Bytes_retrans, delivery: 8 * float64(ti.Delivery_rate)}
}
