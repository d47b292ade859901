//go:build linux

package kstamp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
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
// 10 ms. A Reader waits in the netpoller instead with Netpoller, and in
// the receive itself, as a plain blocking client does, once EnableBlock
// has taken its socket out of the netpoller. A Reader is not safe for
// concurrent reads.
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

	raw syscall.RawConn
	oob []byte
	blk blocking

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
		if r.blk.expired() {
			return 0, os.ErrDeadlineExceeded
		}
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

// EnableBlock makes every Read wait in a blocking recvmsg(2) made as a raw
// system call, as a plain blocking client waits in recv: the thread sleeps
// in the receive itself, and the kernel wakes it with the data, on the
// CPU of the socket's waker when that one is free, without a poll, a
// netpoller's park or a P handed to another thread. Over loopback on two
// cores an open-loop GET's p50 read 0.87x (1000/s) and 0.89x (5000/s) what
// it read in the netpoller, over 6 alternating rounds; a stand-alone Go
// client so read 25-26 us against a plain C or Python client's 23-25
// (docs/benchmarks.md, issue 42). It suits one reader
// on a thread that has nothing else to do while it waits (an open-loop
// client's only worker) in a process with another P: the waiting thread
// keeps its P, and the runtime does not see it wait.
//
// It takes the socket out of Go's netpoller and puts it in blocking mode,
// for good, with receive and send timeouts of pollSlice. Out of the
// netpoller, the socket's traffic wakes no thread of the runtime's (in it,
// every send and reply woke the netpoller's thread on the other CPU); a
// wait ends within pollSlice to notice the connection's deadline and
// Close, and a signal (the runtime's preemption, the garbage collector's
// stop) ends it at once (EINTR), after which Read yields before it
// receives again. The connection's other users then block in their system
// calls, and a write that finds no room waits for its deadline: only a
// connection read and written through r (Read, Send) should be given to
// it. Netpoller and Spin have no effect on a blocking Reader.
//
// A blocking Reader keeps its own deadline (SetDeadline), checked as each
// wait ends: setting the connection's costs the runtime's timers work on
// every request, and sometimes a wake-up of the netpoller's thread. The
// caller clears the connection's deadlines (EnableBlock cannot).
func (r *Reader) EnableBlock() error {
	var serr error
	tv := unix.NsecToTimeval(int64(pollSlice))
	if err := r.raw.Control(func(fd uintptr) {
		// The timeouts first: a non-blocking socket ignores them, so a
		// failure leaves the socket as it was.
		if serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); serr != nil {
			return
		}
		if serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); serr != nil {
			return
		}
		if serr = leaveEpoll(int(fd)); serr != nil {
			return
		}
		serr = unix.SetNonblock(int(fd), false)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("kstamp: blocking mode: %w", serr)
	}
	r.blk.on = true
	return nil
}

// SetDeadline sets the deadline of a blocking Reader's Read and Send
// (EnableBlock), which then fail with os.ErrDeadlineExceeded within
// pollSlice of it; the zero time means none. A Reader that does not block
// takes the connection's deadlines instead.
func (r *Reader) SetDeadline(t time.Time) { r.blk.deadline = t }

// blocking is a blocking Reader's state (EnableBlock), which its sends
// through TX share (Reader.Send passes it on).
type blocking struct {
	on       bool
	deadline time.Time // SetDeadline's
}

// expired reports whether a blocking socket's deadline has passed; nil
// (a TX's Write outside a Reader's Send) is a socket that does not block.
func (b *blocking) expired() bool {
	return b != nil && b.on && !b.deadline.IsZero() && !time.Now().Before(b.deadline)
}

// retry is what a send's pass returns when the socket had no room: false
// (wait in the netpoller) for a non-blocking socket, true for a blocking
// one, whose send waited pollSlice and which the netpoller no longer
// watches: the caller's next pass checks the deadline and Close and sends
// again.
func (b *blocking) retry() bool { return b != nil && b.on }

// leaveEpoll removes fd from the epoll sets that watch it under that
// number: Go's netpoller's (the runtime keeps no other). The runtime's own
// removal, when the connection closes, then finds nothing, which it
// ignores. An epoll set is keyed by the file and the number, so no other
// file's registration is touched.
func leaveEpoll(fd int) error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("kstamp: leaving the netpoller: %w", err)
	}
	left := false
	for _, e := range fds {
		ep, err := strconv.Atoi(e.Name())
		if err != nil || ep == fd {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		if unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil) == nil {
			left = true
		}
	}
	if !left {
		return errors.New("kstamp: leaving the netpoller: no epoll set watches the socket")
	}
	return nil
}

// receive is Read's pass on the socket: one non-blocking receive, or, when
// there is nothing and the spin is over, one poll(2) of up to pollSlice and
// a receive after it (the next pass checks the deadline and Close and polls
// again), or with Netpoller a wait in the netpoller.
func (r *Reader) receive(fd uintptr) bool {
	if r.blk.on {
		r.recvmsgBy(unix.RawSyscall, fd, 0)
		if r.rerr == unix.EINTR {
			// Most likely the runtime asking this goroutine to stop (a
			// raw system call is no place to): it yields here.
			runtime.Gosched()
		}
		return true // a wait's end (EAGAIN): Read checks the deadline and Close, and receives again
	}
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
func (r *Reader) recvmsg(fd uintptr) { r.recvmsgBy(unix.Syscall, fd, unix.MSG_DONTWAIT) }

// recvmsgBy is recvmsg through call (unix.Syscall or unix.RawSyscall) with
// flags.
func (r *Reader) recvmsgBy(call func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, unix.Errno), fd uintptr, flags uintptr) {
	r.msg.SetControllen(len(r.oob))
	r.msg.Flags = 0
	n, _, errno := call(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), flags)
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
