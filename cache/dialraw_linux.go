//go:build linux

package cache

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawAddr is an endpoint address that is an IP literal, parsed once, which
// the resp engine connects to with a socket of its own instead of
// net.Dialer (issue 31). Connect-per-operation runs open thousands of
// connections a second, and net.Dialer spends on each what such a run does
// not need: it parses the address again, derives a context and a timer for
// its deadline, and asks the kernel for both addresses of the connection
// (getsockname, getpeername) that nobody reads. The prober keeps
// net.Dialer: its connect phase is timed as it always was.
type rawAddr struct {
	addr   string
	tcp    *net.TCPAddr
	family int
	// sa4 or sa6 is the address as connect(2) takes it: built once, read
	// by every connect (unix.Connect would convert and allocate a copy
	// each time).
	sa4 unix.RawSockaddrInet4
	sa6 unix.RawSockaddrInet6
}

// newRawAddr parses addr; nil when it is not an IP literal and port (a name,
// which is resolved per connection) or is a scoped IPv6 address.
func newRawAddr(addr string) *rawAddr {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" {
		return nil
	}
	ip := ap.Addr().Unmap()
	r := &rawAddr{addr: addr, tcp: net.TCPAddrFromAddrPort(ap)}
	var port *[2]byte // network byte order, whatever the host's
	if ip.Is4() {
		r.family, r.sa4.Family, r.sa4.Addr = unix.AF_INET, unix.AF_INET, ip.As4()
		port = (*[2]byte)(unsafe.Pointer(&r.sa4.Port))
	} else {
		r.family, r.sa6.Family, r.sa6.Addr = unix.AF_INET6, unix.AF_INET6, ip.As16()
		port = (*[2]byte)(unsafe.Pointer(&r.sa6.Port))
	}
	port[0], port[1] = byte(ap.Port()>>8), byte(ap.Port())
	return r
}

// connect starts connecting fd, or asks how its connect is going.
func (r *rawAddr) connect(fd int) error {
	sa, n := unsafe.Pointer(&r.sa4), uintptr(unix.SizeofSockaddrInet4)
	if r.family == unix.AF_INET6 {
		sa, n = unsafe.Pointer(&r.sa6), unix.SizeofSockaddrInet6
	}
	if _, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(sa), n); e != 0 {
		return e
	}
	return nil
}

// dial connects to r by deadline, waiting in the netpoller. When ctx can
// end, the connection is closed as soon as it does (stop unregisters
// that; nil when ctx cannot end), which interrupts the connect or whatever
// is blocked on the connection later, as dialer.dial's hook does.
func (r *rawAddr) dial(ctx context.Context, deadline time.Time) (nc net.Conn, stop func() bool, err error) {
	fd, err := unix.Socket(r.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, r.dialError(os.NewSyscallError("socket", err))
	}
	cerr := r.connect(fd)
	switch cerr {
	case nil, unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
	default:
		unix.Close(fd)
		return nil, nil, r.dialError(os.NewSyscallError("connect", cerr))
	}
	c := &fileConn{f: os.NewFile(uintptr(fd), r.addr), raddr: r.tcp}
	if c.rc, err = c.f.SyscallConn(); err != nil {
		c.f.Close()
		return nil, nil, r.dialError(err)
	}
	if ctx.Done() != nil {
		f := c.f
		stop = context.AfterFunc(ctx, func() { f.Close() })
	}
	if cerr != nil {
		if err := c.awaitConnect(r, deadline); err != nil {
			if stop != nil {
				stop()
			}
			c.f.Close()
			return nil, nil, r.dialError(err)
		}
	}
	return c, stop, nil
}

func (r *rawAddr) dialError(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: r.tcp, Err: err}
}

// awaitConnect waits until the connect in progress ends, by deadline, and
// returns its error. It asks the socket's TCP_INFO, which answers at once:
// SYN_SENT while the handshake is under way, CLOSE once the connect failed
// (a connect(2) again then says why: ECONNREFUSED...), any other state once
// connected. The TCP_INFO that says so is kept for readTCPInfo, which the
// connect's causes read next: a connection costs one system call fewer
// than asking connect(2) and then TCP_INFO. The answer is asked for before
// the first wait, as RawConn.Write forgets a readiness the netpoller took
// before it was called: over loopback the handshake is usually over when
// the first connect returns.
func (c *fileConn) awaitConnect(r *rawAddr, deadline time.Time) error {
	if err := c.f.SetWriteDeadline(deadline); err != nil {
		return err
	}
	var (
		connErr error
		raw     unix.TCPInfo
	)
	err := c.rc.Write(func(fd uintptr) bool {
		size, errno := getTCPInfo(fd, &raw)
		switch {
		case errno != 0:
			connErr = os.NewSyscallError("getsockopt", errno)
			return true
		case raw.State == unix.BPF_TCP_SYN_SENT:
			return false // wait until writable: connected or failed
		case raw.State == unix.BPF_TCP_CLOSE:
			switch err := r.connect(int(fd)); err {
			case nil, unix.EISCONN:
			case unix.EALREADY, unix.EINPROGRESS, unix.EINTR:
				return false
			default:
				connErr = os.NewSyscallError("connect", err)
				return true
			}
		}
		c.info, c.hasInfo = tcpInfoOf(&raw, size), true
		return true
	})
	if err != nil {
		return err
	}
	return connErr
}

// fileConn is a connected TCP socket as a net.Conn, read and written
// through an *os.File, which waits in the netpoller and keeps deadlines
// as a net.TCPConn does. Its errors are shaped as net's (*net.OpError,
// net.ErrClosed once closed), so that they are classified alike.
type fileConn struct {
	f     *os.File
	rc    syscall.RawConn // f's, made once
	raddr *net.TCPAddr
	// noDelay records that TCP_NODELAY is set (see Write).
	noDelay bool
	// info is the TCP_INFO that ended awaitConnect, until readTCPInfo
	// takes it (hasInfo).
	info    tcpInfo
	hasInfo bool
}

// noDelayAbove is the longest write sent without TCP_NODELAY: shorter
// than any TCP segment (536 bytes at the least), so it leaves in one.
const noDelayAbove = 512

func (c *fileConn) Read(b []byte) (int, error) {
	n, err := c.f.Read(b)
	if err == io.EOF {
		return n, err
	}
	return n, c.opError("read", err)
}

// Write sends b. net.Dialer sets TCP_NODELAY on every connection; this
// one does only before a write that may take several segments, whose last
// Nagle's algorithm would hold back until the server acknowledged the
// others. A shorter command leaves at once anyway: Nagle holds a segment
// back only while data sent earlier is unacknowledged, and a connection
// that reads each reply before it writes the next command has none. A
// connect-per-operation run saves a system call per connection.
func (c *fileConn) Write(b []byte) (int, error) {
	if len(b) > noDelayAbove && !c.noDelay {
		if err := c.setNoDelay(); err != nil {
			return 0, c.opError("write", err)
		}
	}
	n, err := c.f.Write(b)
	return n, c.opError("write", err)
}

func (c *fileConn) setNoDelay() error {
	var serr error
	if err := c.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("setsockopt", serr)
	}
	c.noDelay = true
	return nil
}

func (c *fileConn) Close() error { return c.opError("close", c.f.Close()) }

// LocalAddr asks the kernel (nil when it cannot say): nothing in this
// package reads it, so connections do not pay for it up front.
func (c *fileConn) LocalAddr() net.Addr {
	var la net.Addr
	_ = c.rc.Control(func(fd uintptr) {
		if sa, err := unix.Getsockname(int(fd)); err == nil {
			la = tcpAddrOf(sa)
		}
	})
	return la
}

func (c *fileConn) RemoteAddr() net.Addr { return c.raddr }

func (c *fileConn) SetDeadline(t time.Time) error { return c.opError("set", c.f.SetDeadline(t)) }

func (c *fileConn) SetReadDeadline(t time.Time) error {
	return c.opError("set", c.f.SetReadDeadline(t))
}

func (c *fileConn) SetWriteDeadline(t time.Time) error {
	return c.opError("set", c.f.SetWriteDeadline(t))
}

// SyscallConn gives internal/kstamp the socket.
func (c *fileConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// opError shapes err as net's; nil stays nil, io.EOF stays io.EOF.
func (c *fileConn) opError(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, os.ErrClosed) {
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: "tcp", Addr: c.raddr, Err: err}
}

func tcpAddrOf(sa unix.Sockaddr) *net.TCPAddr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	}
	return nil
}
