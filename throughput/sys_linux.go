//go:build linux

package throughput

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

const tcpInfoAvailable = true

// readTCPInfo samples TCP_INFO from a TCP connection.
func readTCPInfo(c net.Conn) (tcpInfo, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: not a TCP connection")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", err)
	}
	var ti *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", err)
	}
	if serr != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", serr)
	}
	return tcpInfo{
		OK:           true,
		TotalRetrans: int64(ti.Total_retrans),
		SndCwndBytes: int64(ti.Snd_cwnd) * int64(ti.Snd_mss),
		RTTUs:        int64(ti.Rtt),
		RTTVarUs:     int64(ti.Rttvar),
		PMTU:         int64(ti.Pmtu),
	}, nil
}

// controlTCP sets the options that must be in place before connect.
func controlTCP(fd uintptr, o sockOpts) error {
	if o.window > 0 {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, o.window); err != nil {
			return fmt.Errorf("throughput: SO_SNDBUF: %w", err)
		}
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, o.window); err != nil {
			return fmt.Errorf("throughput: SO_RCVBUF: %w", err)
		}
	}
	if o.mss > 0 {
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.mss); err != nil {
			return fmt.Errorf("throughput: TCP_MAXSEG: %w", err)
		}
	}
	if o.congestion != "" {
		if err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.congestion); err != nil {
			return fmt.Errorf("throughput: TCP_CONGESTION %q: %w", o.congestion, err)
		}
	}
	return nil
}

// optsNotAvailable lists requested options this platform cannot apply.
func optsNotAvailable(sockOpts) []string { return nil }

// reuseAddr sets SO_REUSEADDR so UDP stream sockets can share the server port.
func reuseAddr(fd uintptr) error {
	return unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
}

// connectFD connects a bound UDP socket to its peer behind the net package's
// back, as iperf3's server does, so the kernel steers that peer's datagrams
// to it.
func connectFD(fd uintptr, a *net.UDPAddr) error {
	return syscall.Connect(int(fd), sockaddr(a))
}

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

// forceBuffers raises socket buffers past rmem_max/wmem_max where the
// process may (root); failures are ignored, the plain setting stays.
func forceBuffers(c syscall.Conn, n int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n)
	})
}

// socketBuffers reads the actual SO_SNDBUF and SO_RCVBUF.
func socketBuffers(c syscall.Conn) (snd, rcv int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		snd, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		rcv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	return snd, rcv
}

// tcpCongestion returns the congestion control algorithm of a TCP connection.
func tcpCongestion(c net.Conn) string {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return ""
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}
