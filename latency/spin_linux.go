//go:build linux

package latency

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/netperfkit/netperfkit/internal/kstamp"
	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"

	"golang.org/x/sys/unix"
)

// spinTransport is PingPongConfig.Spin's path: raw non-blocking receives on the socket's file
// descriptor, spinning for up to spin before blocking in poll(2). With a zero
// spin it is the default receive path on linux: the reading thread sleeps in the kernel,
// which wakes it when a reply arrives, where Go's netpoller would first have
// to find it a P (tens of microseconds on an idle machine). Receives take
// the kernel's arrival time (SO_TIMESTAMPNS) when the socket allows. The
// caller locks its goroutine to an OS thread.
type spinTransport struct {
	conn    net.Conn // owns fd; closed only by close
	fd      int
	spin    time.Duration
	timeout time.Duration
	aborted atomic.Bool

	buf      []byte            // UDP
	fr       *wire.FrameReader // TCP, over rd
	deadline time.Time         // of the TCP read in progress

	// With stamps, receives are recvmsg(2) calls whose control messages
	// (oob) hold the arrival time, kept in last.
	stamps bool
	oob    []byte
	msg    unix.Msghdr
	iov    unix.Iovec
	last   time.Time
	pfd    [1]unix.PollFd // the reader's
	wpfd   [1]unix.PollFd // the writer's

	onReadable func() error // see whileWriting

	// tx, when the run asked for transmit stamps and the kernel gives
	// them, stamps every write; lastID is the key of the last one's.
	tx      *kstamp.TX
	txErr   error // why tx is nil
	lastID  uint32
	wroteTX bool
}

// readBy returns the next message if one arrives by deadline, sleeping in
// ppoll(2), to the nanosecond, meanwhile; ok is false when none did (over
// TCP a message begun by then stays buffered for the next call). A
// deadline already passed makes it one non-blocking receive.
func (t *spinTransport) readBy(deadline time.Time) (msg []byte, ok bool, err error) {
	if t.fr != nil {
		t.deadline = deadline
		_, msg, err := t.fr.Next()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("latency: read: %w", err)
		}
		return msg, true, nil
	}
	for {
		// A wait polls first: the sleeping sender's wait to its next
		// send is one ppoll(2) that times out, not a receive that finds
		// nothing as well (issue 42).
		if rem := time.Until(deadline); rem > 0 {
			got, err := t.poll(&t.pfd, unix.POLLIN, rem)
			if err != nil {
				return nil, false, err
			}
			if got&(unix.POLLIN|unix.POLLERR|unix.POLLHUP) == 0 {
				if t.aborted.Load() {
					return nil, false, errAborted
				}
				if !time.Now().Before(deadline) {
					return nil, false, nil
				}
				continue // poll's 20 ms slice ended first
			}
		}
		n, errno := t.tryRecv(t.buf)
		switch errno {
		case 0:
			return t.buf[:n], true, nil
		case unix.EAGAIN, unix.EINTR:
		default:
			return nil, false, fmt.Errorf("latency: recv: %w", errno)
		}
		if t.aborted.Load() {
			return nil, false, errAborted
		}
		if !time.Now().Before(deadline) {
			return nil, false, nil
		}
	}
}

// preciseTimers sets the calling thread's timer slack to 1 us, so that its
// timed waits (ppoll(2)) end within microseconds of their time rather than
// the default slack's 50 us later; the function it returns restores the
// slack. The caller locks its goroutine to the thread.
func preciseTimers() (restore func()) {
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || old <= 0 {
		return func() {}
	}
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	return func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0) }
}

// threadCPU is the CPU time (user and system) the calling thread has used:
// a run's threads are locked to it, so the difference over the run is the
// run's own cost. Zero when the kernel does not say.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// whileWriting sets what a write that waits for the socket's send buffer
// does when replies arrive meanwhile: a sender that also receives (an
// under-load run on one thread) must read them, or a server blocked on
// sending them would never read what the write waits to send.
func (t *spinTransport) whileWriting(onReadable func() error) { t.onReadable = onReadable }

// poll sleeps in ppoll(2) until the socket has one of events or d (at most
// 20 ms, to notice an abort) passes, and returns the events it has. pfd is
// the reader's or the writer's (Spin's under-load reads and writes on
// two threads).
func (t *spinTransport) poll(pfd *[1]unix.PollFd, events int16, d time.Duration) (int16, error) {
	ts := unix.NsecToTimespec(int64(min(d, 20*time.Millisecond)))
	pfd[0] = unix.PollFd{Fd: int32(t.fd), Events: events}
	if _, err := unix.Ppoll(pfd[:], &ts, nil); err != nil && err != unix.EINTR {
		return 0, fmt.Errorf("latency: ppoll: %w", err)
	}
	if pfd[0].Revents&unix.POLLERR != 0 && t.tx != nil {
		// A transmit stamp waits in the error queue: drained, so that
		// the next poll sleeps.
		t.tx.Drain()
	}
	return pfd[0].Revents, nil
}

// kernelTransport reads and writes conn, dialled by dialConn, on its file
// descriptor: spinning for up to c.Spin per reply, and taking transmit
// stamps when a ping-pong run asked for the kernel view.
func kernelTransport(conn net.Conn, buf []byte, c *PingPongConfig) (transport, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("latency: %T has no file descriptor", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	t := &spinTransport{conn: conn, buf: buf, spin: c.Spin, timeout: c.ReadTimeout, fd: -1}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		t.fd = int(fd)
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	if serr == nil {
		t.stamps = true
		t.oob = make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))*2)
	}
	if buf == nil {
		t.fr = wire.NewFrameReader(spinReader{t}, c.MessageSize)
	}
	if c.KernelStamps && c.MPS == 0 {
		t.tx, t.txErr = kstamp.EnableTX(conn)
	}
	return t, nil
}

var errAborted = errors.New("latency: run aborted")

// recv receives into b, spinning and then polling until deadline.
func (t *spinTransport) recv(b []byte, deadline time.Time) (int, error) {
	spinUntil := time.Now().Add(t.spin)
	if deadline.Before(spinUntil) {
		spinUntil = deadline
	}
	for i := 0; ; i++ {
		n, errno := t.tryRecv(b)
		if errno == 0 {
			return n, nil
		}
		if errno != unix.EAGAIN && errno != unix.EINTR {
			return 0, fmt.Errorf("latency: recv: %w", errno)
		}
		if t.spin <= 0 {
			break
		}
		if i&15 == 15 {
			if t.aborted.Load() {
				return 0, errAborted
			}
			if time.Now().After(spinUntil) {
				break
			}
		}
	}
	return t.wait(b, deadline)
}

func (t *spinTransport) tryRecv(b []byte) (int, unix.Errno) {
	if t.stamps {
		t.iov.Base = &b[0]
		t.iov.SetLen(len(b))
		t.msg.Iov, t.msg.Iovlen = &t.iov, 1
		t.msg.Control = &t.oob[0]
		t.msg.SetControllen(len(t.oob))
		n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(t.fd), uintptr(unsafe.Pointer(&t.msg)), unix.MSG_DONTWAIT)
		if errno == 0 {
			if at, ok := kstamp.Stamp(t.oob[:t.msg.Controllen]); ok {
				t.last = at
			} else {
				t.last = time.Time{}
			}
		}
		return int(n), errno
	}
	// RawSyscall skips the scheduler's syscall bookkeeping, which a
	// non-blocking receive does not need and which would add to every spin.
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(t.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_DONTWAIT, 0, 0)
	return int(n), errno
}

// wait blocks in ppoll(2) in short slices (to notice an abort) until the
// socket is readable or deadline passes.
func (t *spinTransport) wait(b []byte, deadline time.Time) (int, error) {
	for {
		if t.aborted.Load() {
			return 0, errAborted
		}
		rem := time.Until(deadline)
		if rem <= 0 {
			return 0, fmt.Errorf("latency: read: %w", os.ErrDeadlineExceeded)
		}
		if _, err := t.poll(&t.pfd, unix.POLLIN, rem); err != nil {
			return 0, err
		}
		n, errno := t.tryRecv(b)
		if errno == 0 {
			return n, nil
		}
		if errno != unix.EAGAIN && errno != unix.EINTR {
			return 0, fmt.Errorf("latency: recv: %w", errno)
		}
	}
}

type spinReader struct{ t *spinTransport }

func (r spinReader) Read(b []byte) (int, error) {
	n, err := r.t.recv(b, r.t.deadline)
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

func (t *spinTransport) read(deadline time.Time) ([]byte, error) {
	if t.fr != nil {
		t.deadline = deadline
		_, msg, err := t.fr.Next()
		return msg, err
	}
	n, err := t.recv(t.buf, deadline)
	if err != nil {
		return nil, err
	}
	return t.buf[:n], nil
}

func (t *spinTransport) write(b []byte) error {
	if err := t.send(b); err != nil {
		return err
	}
	if t.tx != nil {
		t.lastID, t.wroteTX = t.tx.Sent(len(b)), true
		t.tx.Collect(t.lastID)
	}
	return nil
}

func (t *spinTransport) send(b []byte) error {
	var deadline time.Time // set at the first EAGAIN: most sends never wait
	for len(b) > 0 {
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(t.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			b = b[n:]
			continue
		case unix.EINTR:
			continue
		case unix.EAGAIN:
		default:
			return fmt.Errorf("latency: send: %w", errno)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(t.timeout)
		}
		rem := time.Until(deadline)
		if rem <= 0 {
			return fmt.Errorf("latency: write: %w", os.ErrDeadlineExceeded)
		}
		if t.aborted.Load() {
			return errAborted
		}
		events := int16(unix.POLLOUT)
		if t.onReadable != nil {
			events |= unix.POLLIN
		}
		got, err := t.poll(&t.wpfd, events, rem)
		if err != nil {
			return err
		}
		if got&unix.POLLIN != 0 && t.onReadable != nil {
			if err := t.onReadable(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *spinTransport) arrived() time.Time { return t.last }

func (t *spinTransport) netConn() net.Conn { return t.conn }

// sentKey is the transmit stamp key of the last write; false without
// stamps (why says why).
func (t *spinTransport) sentKey() (uint32, bool) { return t.lastID, t.wroteTX }

// takeTX returns the transmit stamp of the write whose key is id.
func (t *spinTransport) takeTX(id uint32) (time.Time, bool) { return t.tx.Take(id) }

// noTX is why the transport has no transmit stamps, empty when it has.
func (t *spinTransport) noTX() string {
	switch {
	case t.tx != nil:
		return ""
	case t.txErr != nil:
		return t.txErr.Error()
	}
	return "not asked for"
}
func (t *spinTransport) abort()       { t.aborted.Store(true) }
func (t *spinTransport) close() error { return t.conn.Close() }
