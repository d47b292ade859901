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

	raw     syscall.RawConn
	oob     []byte
	arrived time.Time
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
	return &Reader{raw: raw, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))*2)}, true
}

// Read reads into b, blocking in the kernel until data, the connection's
// read deadline or its closing.
func (r *Reader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	ms := int(pollSlice / time.Millisecond)
	var spinUntil time.Time
	if r.Spin > 0 {
		spinUntil = time.Now().Add(r.Spin)
	}
	for {
		var n, oobn int
		var rerr error
		err := r.raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, r.oob, unix.MSG_DONTWAIT)
			if rerr == unix.EAGAIN && !spinUntil.IsZero() && time.Now().Before(spinUntil) {
				return true // spin: the next pass receives again
			}
			if rerr == unix.EAGAIN {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				_, _ = unix.Poll(fds, ms)
				n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, r.oob, unix.MSG_DONTWAIT)
			}
			// Never wait in the netpoller: the next pass checks the
			// deadline and Close and polls again.
			return true
		})
		switch {
		case err != nil:
			return 0, err
		case rerr == unix.EAGAIN || rerr == unix.EINTR:
			continue
		case rerr != nil:
			return 0, fmt.Errorf("kstamp: recvmsg: %w", rerr)
		case n == 0:
			return 0, io.EOF
		}
		if t, ok := Stamp(r.oob[:oobn]); ok {
			r.arrived = t
		} else {
			r.arrived = time.Now()
		}
		return n, nil
	}
}

// Arrived is when the kernel received the data the last Read returned (its
// last segment), a wall-clock reading; the time Read returned when the
// kernel gave none.
func (r *Reader) Arrived() time.Time { return r.arrived }

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
