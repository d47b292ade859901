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

// forceBuffers sets the receive and send buffers past rmem_max/wmem_max
// where the process may (root); failures are ignored, the plain setting stays.
func forceBuffers(c syscall.Conn, rcv, snd int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcv)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, snd)
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
