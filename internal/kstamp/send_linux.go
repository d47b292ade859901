//go:build linux

package kstamp

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Send sends b on the connection and, when the socket takes it in one
// system call, waits in the netpoller until the socket is readable (the
// reply, the connection's end or its read deadline), so that the Read
// after it receives at once. The send is made inside that wait, after the
// netpoller has forgotten what it saw before, so no readiness is lost: a
// Read after a plain write starts with a receive that finds nothing,
// which puts one system call more than a blocking client makes on every
// reply's path (about a microsecond on a paravirtualized guest, issue
// 42). A send the socket does not take whole is finished as a write,
// without the wait; so is every send of a Reader without Netpoller.
//
// With TX set, the send goes through it, which keeps its keys: stamp asks
// for a transmit stamp, which Send collects (TX.Collect) before the wait,
// and id is its key. left, when not nil, is set to when the send
// returned. Send allocates nothing.
func (r *Reader) Send(b []byte, stamp bool, left *time.Time) (id uint32, err error) {
	t := r.TX
	if t != nil && !t.perSend {
		return 0, fmt.Errorf("%w: Send needs a TX from EnablePerSend", ErrTXUnsupported)
	}
	if len(b) == 0 {
		if t != nil {
			return t.next - 1, nil
		}
		return 0, nil
	}
	if t != nil {
		t.begin(b, stamp, &r.blk)
	}
	r.sb, r.sn, r.serr, r.sent, r.left = b, 0, nil, false, left
	defer func() { r.sb, r.left = nil, nil }()
	if r.Netpoller {
		if err := r.raw.Read(r.sendWait); err != nil {
			if t != nil {
				t.sb = nil
				return t.sid, err
			}
			return 0, err
		}
	}
	if t != nil {
		_, id, err = t.finish()
		if err == nil && stamp && !r.sent {
			t.Collect(id)
		}
	} else {
		for pass := 0; r.serr == nil && r.sn < len(r.sb); pass++ {
			if pass > 0 && r.blk.expired() {
				return 0, os.ErrDeadlineExceeded
			}
			if err := r.raw.Write(r.sendPlainFn); err != nil {
				return 0, err
			}
		}
		if r.serr != nil {
			err = fmt.Errorf("kstamp: sendto: %w", r.serr)
		}
	}
	if err == nil && !r.sent && left != nil {
		*left = time.Now()
	}
	return id, err
}

// sendWaitFD is Send's pass inside the read wait: the first sends, and
// asks the netpoller to wait for data when the socket took everything;
// the next (after the wait) ends it.
func (r *Reader) sendWaitFD(fd uintptr) bool {
	if r.sent || r.sn > 0 {
		return true
	}
	t := r.TX
	if t == nil {
		r.sendPlain(fd)
		if r.serr != nil || r.sn < len(r.sb) {
			return true // Send finishes it as a write
		}
	} else {
		t.sendFD(fd)
		r.sn = t.sn
		if t.serr != nil || t.sn < len(t.sb) {
			return true
		}
	}
	r.sent = true
	if r.left != nil {
		*r.left = time.Now()
	}
	if t != nil && t.sstamp {
		// Taken now: the stamp, queued by the send itself over loopback,
		// would otherwise end the wait at once (POLLERR).
		t.until, t.hasUntil = t.sid, true
		t.drainFD(fd)
	}
	return false
}

// sendPlain is one send(2) of what Send has left; false asks the
// netpoller to wait until the socket is writable.
func (r *Reader) sendPlain(fd uintptr) bool {
	rest := r.sb[r.sn:]
	n, _, errno := unix.Syscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)), unix.MSG_NOSIGNAL, 0, 0)
	switch errno {
	case 0:
		r.sn += int(n)
	case unix.EAGAIN:
		return r.blk.retry()
	case unix.EINTR:
	default:
		r.serr = errno
	}
	return true
}
