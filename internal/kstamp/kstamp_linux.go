//go:build linux

package kstamp

import (
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reader reads a connection's socket on the calling goroutine's thread,
// which blocks in poll(2) rather than parking in the netpoller: the kernel
// wakes that thread itself when data arrives, where the netpoller's path
// (an idle P found, a goroutine readied) costs tens of microseconds on an
// idle machine. The connection's deadlines and Close still apply, within
// 10 ms. A Reader is not safe for concurrent reads.
type Reader struct {
	// Spin, when positive, makes each Read try non-blocking receives for
	// up to Spin before it sleeps: on a thread that would otherwise spin
	// anyway (an open-loop sender waiting for its next send time) it
	// spares the reply the kernel's wake-up, at the cost of the thread's
	// core meanwhile.
	Spin time.Duration
	// Netpoller, when set, makes a Read that finds nothing wait in Go's
	// netpoller instead of in poll(2) on its thread. A thread asleep in
	// poll(2) keeps its P: several readers on few Ps hold them all, and a
	// reader whose data came, or any other goroutine, then waits for the
	// runtime to take one back (up to 10 ms). Readers that share the Ps
	// (several workers of one schedule) set it, at the cost of the
	// netpoller's wake-up.
	Netpoller bool
	// TX, when set, is the connection's transmit stamper: a stamp waiting
	// in the error queue makes poll(2) return at once (POLLERR), so a Read
	// that sees it drains the queue into TX rather than spin.
	TX *TX

	raw     syscall.RawConn
	oob     []byte
	arrived time.Time
	stamped bool

	// One read's state, kept here so that a Read allocates nothing: a
	// spinning Read passes through recv once a microsecond or so, and an
	// allocation each time (a closure, x/sys's Recvmsg) made the garbage
	// collector run 40 times a second under a 5000/s open-loop run.
	recv      func(fd uintptr) bool
	msg       unix.Msghdr
	iov       unix.Iovec
	pfd       [1]unix.PollFd
	pollMs    int
	spinUntil time.Time
	n, oobn   int
	rerr      error

	// Send's state, kept here for the same reason.
	sendWait, sendPlainFn func(fd uintptr) bool
	sb                    []byte
	sn                    int
	serr                  error
	sent                  bool // the send went in one call, inside the wait
	left                  *time.Time
}

// New returns a Reader of c, or false when c has no socket to read so
// (a TLS connection, a pipe) or the kernel refuses receive timestamps.
func New(c net.Conn) (*Reader, bool) {
	if c == nil {
		return nil, false
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil, false
	}
	r := &Reader{raw: raw, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))*2)}
	r.recv = r.receive
	r.sendWait, r.sendPlainFn = r.sendWaitFD, r.sendPlain
	return r, true
}

// Read reads into b, blocking in the kernel until data, the connection's
// read deadline or its closing.
func (r *Reader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.pollMs = int(pollSlice / time.Millisecond)
	r.spinUntil = time.Time{}
	if r.Spin > 0 {
		r.spinUntil = time.Now().Add(r.Spin)
	}
	r.iov.Base = &b[0]
	r.iov.SetLen(len(b))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	defer func() { r.iov.Base, r.msg.Iov, r.msg.Control = nil, nil, nil }()
	for {
		err := r.raw.Read(r.recv)
		switch {
		case err != nil:
			return 0, err
		case r.rerr == unix.EAGAIN || r.rerr == unix.EINTR:
			continue
		case r.rerr != nil:
			return 0, fmt.Errorf("kstamp: recvmsg: %w", r.rerr)
		case r.n == 0:
			return 0, io.EOF
		}
		if t, ok := Stamp(r.oob[:r.oobn]); ok {
			r.arrived, r.stamped = t, true
		} else {
			r.arrived, r.stamped = time.Now(), false
		}
		return r.n, nil
	}
}

// receive is Read's pass on the socket: one non-blocking receive, or, when
// there is nothing and the spin is over, one poll(2) of up to pollSlice and
// a receive after it (the next pass checks the deadline and Close and polls
// again), or with Netpoller a wait in the netpoller.
func (r *Reader) receive(fd uintptr) bool {
	r.recvmsg(fd)
	if r.rerr == unix.EAGAIN && !r.spinUntil.IsZero() && time.Now().Before(r.spinUntil) {
		return true // spin: the next pass receives again
	}
	if r.rerr == unix.EAGAIN && r.Netpoller {
		return false // the netpoller waits for data, then calls again
	}
	if r.rerr == unix.EAGAIN {
		r.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		_, _ = unix.Poll(r.pfd[:], r.pollMs)
		if r.pfd[0].Revents&unix.POLLERR != 0 && r.TX != nil {
			r.TX.drainFD(fd)
		}
		r.recvmsg(fd)
	}
	return true
}

// recvmsg receives into the iovec and control buffer Read set up, without
// allocating (x/sys's Recvmsg builds its message header on the heap).
func (r *Reader) recvmsg(fd uintptr) {
	r.msg.SetControllen(len(r.oob))
	r.msg.Flags = 0
	n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), unix.MSG_DONTWAIT)
	r.n, r.oobn, r.rerr = int(n), int(r.msg.Controllen), nil
	if errno != 0 {
		r.n, r.oobn, r.rerr = 0, 0, errno
	}
}

// Arrived is when the kernel received the data the last Read returned (its
// last segment), a wall-clock reading; the time Read returned when the
// kernel gave none.
func (r *Reader) Arrived() time.Time { return r.arrived }

// Stamped is Arrived and whether the kernel stamped it (false when Arrived
// is the time Read returned).
func (r *Reader) Stamped() (time.Time, bool) { return r.arrived, r.stamped }

// Stamp finds the SCM_TIMESTAMPNS control message in oob without
// allocating; the time it returns is a wall-clock reading.
func Stamp(oob []byte) (time.Time, bool) {
	hl := unix.CmsgLen(0)
	tl := int(unsafe.Sizeof(unix.Timespec{}))
	for len(oob) >= hl {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hl || l > len(oob) {
			return time.Time{}, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hl+tl {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[hl]))
			return time.Unix(int64(ts.Sec), int64(ts.Nsec)), true //nolint:unconvert // 32-bit fields on some platforms
		}
		oob = oob[min(unix.CmsgSpace(l-hl), len(oob)):]
	}
	return time.Time{}, false
}
