//go:build linux

package kstamp

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnablePerSend is EnableTX for a socket that stamps only the sends that
// ask (Write with stamp set): the socket keeps only the reporting flags
// (SOF_TIMESTAMPING_SOFTWARE, OPT_ID, OPT_TSONLY and, for TCP, OPT_ID_TCP)
// and each stamped send carries SOF_TIMESTAMPING_TX_SOFTWARE in an
// SCM_TIMESTAMPING control message (Documentation/networking/
// timestamping.rst, "Enabling timestamps via control messages"). A send
// that does not ask costs the kernel no stamp and the caller no read of
// the error queue. Every send must then go through Write, which keeps
// the keys.
func EnablePerSend(c net.Conn) (*TX, error) {
	tcp, raw, err := txSocket(c)
	if err != nil {
		return nil, err
	}
	t := &TX{raw: raw, tcp: tcp, oob: make([]byte, errQueueOOB), perSend: true}
	t.drainFn = t.drainFD
	t.sendFn = t.sendFD
	t.sendOOB = make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&t.sendOOB[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPING
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(t.sendOOB[unix.CmsgLen(0):], unix.SOF_TIMESTAMPING_TX_SOFTWARE)
	base := unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	tries := []int{base | sofOptRXFilter, base}
	if tcp {
		tries = []int{base | sofOptRXFilter | unix.SOF_TIMESTAMPING_OPT_ID_TCP, base | unix.SOF_TIMESTAMPING_OPT_ID_TCP, base | sofOptRXFilter, base}
	}
	if err := t.setFlags(tries); err != nil {
		return nil, err
	}
	return t, nil
}

// txSocket is c's kind and raw socket, or why it cannot be stamped.
func txSocket(c net.Conn) (tcp bool, raw syscall.RawConn, err error) {
	switch c.(type) {
	case *net.TCPConn:
		tcp = true
	case *net.UDPConn:
	default:
		return false, nil, fmt.Errorf("%w: %T is not a TCP or UDP socket", ErrTXUnsupported, c)
	}
	raw, err = c.(syscall.Conn).SyscallConn()
	if err != nil {
		return false, nil, fmt.Errorf("%w: %w", ErrTXUnsupported, err)
	}
	return tcp, raw, nil
}

// setFlags sets SO_TIMESTAMPING to the first of tries the kernel takes.
func (t *TX) setFlags(tries []int) error {
	var serr error
	cerr := t.raw.Control(func(fd uintptr) {
		for _, f := range tries {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, f); serr == nil {
				t.idTCP = f&unix.SOF_TIMESTAMPING_OPT_ID_TCP != 0
				return
			}
		}
	})
	if cerr != nil {
		return fmt.Errorf("%w: %w", ErrTXUnsupported, cerr)
	}
	if serr != nil {
		return fmt.Errorf("%w: setsockopt SO_TIMESTAMPING: %w", ErrTXUnsupported, serr)
	}
	return nil
}

// Write sends all of b on a socket set up by EnablePerSend, by the
// connection's write deadline, and records it as Sent does. With stamp
// set, its first sendmsg(2) asks for a software transmit stamp, keyed by
// id: over TCP the offset of that call's last byte, over UDP the number of
// stamped datagrams before it (the kernel's key moves only for the
// datagrams it stamps); the caller takes it with Collect and Take.
// Without stamp, the kernel stamps nothing and id means nothing. Write
// allocates nothing. On the socket of a Reader in blocking mode
// (Reader.EnableBlock), send through Reader.Send: Write waits in the netpoller,
// which no longer watches that socket, so a full send buffer would hold it
// until the connection's deadline.
func (t *TX) Write(b []byte, stamp bool) (n int, id uint32, err error) {
	if !t.perSend {
		return 0, 0, fmt.Errorf("%w: Write needs a TX from EnablePerSend", ErrTXUnsupported)
	}
	if len(b) == 0 {
		return 0, t.next - 1, nil
	}
	t.begin(b, stamp, nil)
	return t.finish()
}

// begin sets Write's state up to send b, on a socket that blocks as blk
// says (nil: one that does not).
func (t *TX) begin(b []byte, stamp bool, blk *blocking) {
	t.sb, t.sstamp, t.sn, t.serr, t.blk = b, stamp, 0, nil, blk
}

// finish sends what begin's b has left, waiting in the netpoller while
// the socket is full, and returns Write's results.
func (t *TX) finish() (n int, id uint32, err error) {
	for pass := 0; t.serr == nil && t.sn < len(t.sb); pass++ {
		if pass > 0 && t.blk.expired() {
			t.sb = nil
			return t.sn, t.sid, os.ErrDeadlineExceeded
		}
		if err := t.raw.Write(t.sendFn); err != nil {
			t.sb = nil
			return t.sn, t.sid, err
		}
	}
	t.sb = nil
	if t.serr != nil {
		return t.sn, t.sid, fmt.Errorf("kstamp: sendmsg: %w", t.serr)
	}
	return t.sn, t.sid, nil
}

// sendFD is one sendmsg(2) of what Write has left to send; false asks the
// netpoller to wait until the socket is writable.
func (t *TX) sendFD(fd uintptr) bool {
	rest := t.sb[t.sn:]
	t.siov.Base = &rest[0]
	t.siov.SetLen(len(rest))
	t.smsg = unix.Msghdr{Iov: &t.siov}
	t.smsg.SetIovlen(1)
	first := t.sn == 0
	if first && t.sstamp {
		t.smsg.Control = &t.sendOOB[0]
		t.smsg.SetControllen(len(t.sendOOB))
	}
	n, _, errno := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&t.smsg)), unix.MSG_NOSIGNAL)
	t.smsg, t.siov.Base = unix.Msghdr{}, nil
	switch {
	case errno == unix.EAGAIN:
		return t.blk.retry()
	case errno == unix.EINTR:
		return true
	case errno != 0:
		t.serr = errno
		return true
	}
	switch {
	case t.tcp:
		t.next += uint32(n)
		if first {
			t.sid = t.next - 1
		}
	case t.sstamp:
		// The kernel counts only the datagrams it stamps (sk_tskey
		// moves only for a send that asks).
		t.sid = t.Sent(int(n))
	default:
		t.sid = t.next
	}
	t.sn += int(n)
	return true
}
