//go:build linux

package latency

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawUDP is ServePacket's loop over a *net.UDPConn on linux, the way
// `sockperf server` serves UDP: a blocking recvfrom(2) and a sendto(2) a
// message (recvmsg and sendmsg when replies keep their source address) on a duplicate of the socket that Go's netpoller does not watch,
// two system calls and no wake-up of another thread. Through the netpoller
// each message also took a receive that found nothing, an epoll_pwait and
// the scheduler's hand-off of the reading goroutine: about twice sockperf
// server's CPU a message (issue 42). The write deadline becomes the
// socket's SO_SNDTIMEO (IdleTimeout+WriteTimeout: the reply is dropped), as
// before; reads wait without one.
type rawUDP struct {
	p   *packetLoop
	fd  int
	msg unix.Msghdr
	iov unix.Iovec
	// name is the sender's address, which the reply goes back to as it
	// came (no conversion); big enough for IPv4 and IPv6.
	name unix.RawSockaddrInet6
	out  unix.Msghdr
	oiov unix.Iovec
}

// serveRaw serves p's UDP socket on a blocking duplicate until ctx ends or
// a read fails. It reports false, having done nothing, when the socket
// cannot be duplicated: the caller then serves through the netpoller. The
// original descriptor is closed at once, so that the netpoller forgets it.
func (p *packetLoop) serveRaw(ctx context.Context) (bool, error) {
	raw, err := p.uc.SyscallConn()
	if err != nil {
		return false, nil
	}
	fd := -1
	if err := raw.Control(func(s uintptr) { fd, _ = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || fd < 0 {
		return false, nil
	}
	cfg := &p.s.cfg
	// No receive timeout: a read that waits with one arms and disarms a
	// kernel timer each time, a fifth more CPU a message than sockperf's
	// reads, which wait without; a read that waits forever has nothing to
	// retry, and the context's end shuts the socket down.
	if unix.SetNonblock(fd, false) != nil ||
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, timeval(cfg.IdleTimeout+cfg.WriteTimeout)) != nil {
		unix.Close(fd)
		return false, nil
	}
	p.pc.Close()
	// A blocked recvmsg(2) returns once the socket is shut down; the
	// descriptor is closed only after the loop, and never shut down after
	// it is closed (its number may be reused by then).
	var mu sync.Mutex
	closed := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			_ = unix.Shutdown(fd, unix.SHUT_RDWR)
		}
	})
	defer func() {
		stop()
		mu.Lock()
		closed = true
		unix.Close(fd)
		mu.Unlock()
	}()
	r := &rawUDP{p: p, fd: fd}
	return true, r.loop(ctx)
}

func timeval(d time.Duration) *unix.Timeval {
	tv := unix.NsecToTimeval(int64(max(d, time.Millisecond)))
	return &tv
}

func (r *rawUDP) loop(ctx context.Context) error {
	p := r.p
	r.iov.Base = &p.buf[0]
	r.iov.SetLen(len(p.buf))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.out.Name = (*byte)(unsafe.Pointer(&r.name))
	r.out.Iov = &r.oiov
	r.out.SetIovlen(1)
	var yields yielder
	r.msg.Name = (*byte)(unsafe.Pointer(&r.name))
	for {
		n, errno := r.recv()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch errno {
		case 0:
		case unix.EAGAIN, unix.EINTR:
			continue // IdleTimeout passed, or a signal: read again
		default:
			return fmt.Errorf("latency: udp server: recvmsg: %w", errno)
		}
		r.serve(int(n))
		yields.at(monotonic())
	}
}

// recv receives one datagram into the buffer, blocking: recvfrom(2), as
// sockperf does, or recvmsg(2) when the reply needs the datagram's
// destination address (pinned).
func (r *rawUDP) recv() (uintptr, unix.Errno) {
	r.msg.Namelen = uint32(unsafe.Sizeof(r.name))
	if r.p.pin == nil {
		buf := r.p.buf
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(r.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0,
			uintptr(unsafe.Pointer(&r.name)), uintptr(unsafe.Pointer(&r.msg.Namelen)))
		return n, errno
	}
	r.msg.Control = &r.p.pin.rx[0]
	r.msg.SetControllen(len(r.p.pin.rx))
	n, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(r.fd), uintptr(unsafe.Pointer(&r.msg)), 0)
	return n, errno
}

// serve handles one datagram of n bytes, read into the buffer.
func (r *rawUDP) serve(n int) {
	p, s := r.p, r.p.s
	if len(s.cfg.AllowedClients) > 0 && !p.admits(r.from(), nil) {
		return
	}
	var reply bool
	var err error
	if n > s.cfg.MaxMessageSize {
		err = fmt.Errorf("datagram of %d bytes exceeds MaxMessageSize %d", n, s.cfg.MaxMessageSize)
	} else {
		reply, err = s.handle(p.buf[:n])
	}
	if err != nil {
		s.reject(net.UDPAddrFromAddrPort(r.from()), err)
		return
	}
	if !reply {
		return
	}
	s.replies.Add(1) // before the write: a client holding the reply never sees less
	if p.pin == nil {
		_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.fd), uintptr(unsafe.Pointer(&p.buf[0])), uintptr(n), unix.MSG_NOSIGNAL,
			uintptr(unsafe.Pointer(&r.name)), uintptr(r.msg.Namelen))
		if errno != 0 {
			s.replies.Add(-1) // lost, as on the wire
		}
		return
	}
	r.out.Namelen = r.msg.Namelen
	r.oiov.Base = &p.buf[0]
	r.oiov.SetLen(n)
	r.out.Control = nil
	r.out.SetControllen(0)
	p.pin.dst, _ = parsePktinfo(p.pin.rx[:r.msg.Controllen])
	if c := p.pin.control(); c != nil {
		r.out.Control = &c[0]
		r.out.SetControllen(len(c))
	}
	if _, _, errno := unix.Syscall(unix.SYS_SENDMSG, uintptr(r.fd), uintptr(unsafe.Pointer(&r.out)), unix.MSG_NOSIGNAL); errno != 0 {
		s.replies.Add(-1) // lost, as on the wire
	}
}

// from is the address of the datagram read last.
func (r *rawUDP) from() netip.AddrPort {
	port := func(b *uint16) uint16 { return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(b))[:]) }
	switch r.name.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&r.name))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port(&sa.Port))
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(r.name.Addr), port(&r.name.Port))
	}
	return netip.AddrPort{}
}

// rawStream is a TCP connection a Server answers on linux the way `sockperf
// server` does: blocking recvfrom(2) and sendto(2) on a duplicate of its
// socket that Go's netpoller does not watch, where each message cost a
// receive that found nothing, an epoll_pwait, a hand-off between threads
// and a read deadline's timer update (issue 42). IdleTimeout is a
// watchdog's and WriteTimeout the socket's SO_SNDTIMEO: a read or write
// that passes it fails with os.ErrDeadlineExceeded, as before.
type rawStream struct {
	fd     int
	mu     sync.Mutex
	closed bool
	yields yielder

	// The idle timeout is a watchdog's, not the socket's SO_RCVTIMEO, under
	// which every read that waits arms and disarms a kernel timer (a
	// fifth more CPU a message than sockperf server's reads): read is when
	// the last read returned (ns since idleBase), and the watchdog shuts
	// the socket down, setting idled, once none has for idle.
	idle     time.Duration
	idleBase time.Time
	read     atomic.Int64
	idled    atomic.Bool
	watchdog *time.Timer
}

// rawStreamOf takes tc over (closing it) and returns its blocking
// duplicate; nil, with tc untouched, when the socket cannot be duplicated.
func rawStreamOf(tc *net.TCPConn, cfg *ServerConfig) *rawStream {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if err := raw.Control(func(s uintptr) { fd, _ = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || fd < 0 {
		return nil
	}
	if unix.SetNonblock(fd, false) != nil ||
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, timeval(cfg.WriteTimeout)) != nil {
		unix.Close(fd)
		return nil
	}
	tc.Close()
	r := &rawStream{fd: fd, idle: cfg.IdleTimeout, idleBase: time.Now()}
	r.watchdog = time.AfterFunc(r.idle, r.checkIdle)
	return r
}

// checkIdle shuts the connection down when no read has returned for the
// idle timeout, and otherwise looks again when it could have passed.
func (r *rawStream) checkIdle() {
	left := r.idle - (time.Since(r.idleBase) - time.Duration(r.read.Load()))
	if left > 0 {
		r.watchdog.Reset(left)
		return
	}
	r.idled.Store(true)
	r.shutdown()
}

// Read receives into b, blocking until data, the end of the stream or
// IdleTimeout (os.ErrDeadlineExceeded).
func (r *rawStream) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.yield()
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(r.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch {
		case r.idled.Load():
			return 0, fmt.Errorf("latency: server: read: %w", os.ErrDeadlineExceeded)
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return 0, fmt.Errorf("latency: server: read: %w", errno)
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}
}

// write sends all of b, blocking for at most WriteTimeout at a time.
func (r *rawStream) write(b []byte) error {
	for len(b) > 0 {
		n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			b = b[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return fmt.Errorf("latency: server: write: %w", os.ErrDeadlineExceeded)
		default:
			return fmt.Errorf("latency: server: write: %w", errno)
		}
	}
	return nil
}

// yield notes a read's return for the watchdog and lets the scheduler run
// now and then (yielder).
func (r *rawStream) yield() {
	now := int64(time.Since(r.idleBase))
	r.read.Store(now)
	r.yields.at(now)
}

// shutdown ends the blocked read or write, from any goroutine.
func (r *rawStream) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		_ = unix.Shutdown(r.fd, unix.SHUT_RDWR)
	}
}

func (r *rawStream) close() {
	r.watchdog.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		unix.Close(r.fd)
	}
}
