//go:build linux

package cache

import (
	"net"
	"sync"
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

// tcpInfoCall is one getsockopt(TCP_INFO) through a RawConn, with its
// buffer and bound function kept in tcpInfoCalls: a connect-per-operation
// run reads one per connection, and a closure and buffer each time cost it
// four allocations.
type tcpInfoCall struct {
	raw   unix.TCPInfo
	size  uint32
	errno syscall.Errno
	fn    func(fd uintptr)
}

var tcpInfoCalls = sync.Pool{New: func() any {
	c := &tcpInfoCall{}
	c.fn = c.read
	return c
}}

func (c *tcpInfoCall) read(fd uintptr) {
	c.size, c.errno = getTCPInfo(fd, &c.raw)
}

// getTCPInfo reads fd's TCP_INFO into raw and returns how much the kernel
// filled.
func getTCPInfo(fd uintptr, raw *unix.TCPInfo) (uint32, syscall.Errno) {
	size := uint32(unsafe.Sizeof(*raw))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(raw)), uintptr(unsafe.Pointer(&size)), 0)
	return size, errno
}

// readTCPInfo reads the TCP_INFO of nc's socket with getsockopt(2), keeping
// the length the kernel returned. ok is false when nc has no socket of its
// own to ask (a pipe, a wrapped connection) or the kernel refused. On a
// connection the resp engine has just dialled itself, it is the TCP_INFO
// that told the dial its connect was over (fileConn.awaitConnect), taken
// once: nothing happened on the socket in between.
func readTCPInfo(nc net.Conn) (ti tcpInfo, ok bool) {
	if fc, isFile := nc.(*fileConn); isFile && fc.hasInfo {
		fc.hasInfo = false
		return fc.info, true
	}
	sc, isSys := nc.(syscall.Conn)
	if !isSys {
		return ti, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ti, false
	}
	c := tcpInfoCalls.Get().(*tcpInfoCall)
	defer tcpInfoCalls.Put(c)
	if rc.Control(c.fn) != nil || c.errno != 0 {
		return ti, false
	}
	return tcpInfoOf(&c.raw, c.size), true
}

// tcpInfoOf is what the causes read of raw, of which the kernel filled
// size bytes.
func tcpInfoOf(raw *unix.TCPInfo, size uint32) (ti tcpInfo) {
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
	return ti
}
