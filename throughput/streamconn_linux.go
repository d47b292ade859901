package throughput

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A streamThread is its stream's net.Conn once it took the socket over
// (newStreamThread), so that TCP_INFO, SO_RCVLOWAT, the addresses and the
// final Close reach the socket as before. Only the thread reads or writes
// it (recvThread, writeAll); Read and Write are here for completeness.
// There are no deadlines: the thread wakes every threadSlice to look at
// the engine's flags, and wake ends a sleep at once.

var _ interface {
	net.Conn
	syscall.Conn
} = (*streamThread)(nil)

// Read reads once, waiting for data; 0 bytes is io.EOF.
func (t *streamThread) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, errno := t.read(b, false)
		switch {
		case errno == unix.EAGAIN || errno == unix.EINTR:
			continue
		case errno != 0:
			return 0, os.NewSyscallError("recvfrom", errno)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// neverStop is the stop flag of a Write: it waits as long as it takes.
var neverStop atomic.Bool

// Write writes all of b, waiting for room as long as it takes.
func (t *streamThread) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return t.writeAll(t.sendto(b), &neverStop, 0)
}

// Close closes the socket; a second Close is net.ErrClosed.
func (t *streamThread) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd < 0 {
		return net.ErrClosed
	}
	err := unix.Close(t.fd)
	t.fd = -1
	return err
}

func (t *streamThread) LocalAddr() net.Addr  { return t.laddr }
func (t *streamThread) RemoteAddr() net.Addr { return t.raddr }

// SetDeadline and the others do nothing: see above.
func (t *streamThread) SetDeadline(time.Time) error      { return nil }
func (t *streamThread) SetReadDeadline(time.Time) error  { return nil }
func (t *streamThread) SetWriteDeadline(time.Time) error { return nil }

// SyscallConn gives Control of the socket (socket options); its Read and
// Write, which wait through the poller, are errNotAvailable.
func (t *streamThread) SyscallConn() (syscall.RawConn, error) { return threadRawConn{t}, nil }

type threadRawConn struct{ t *streamThread }

func (c threadRawConn) Control(f func(fd uintptr)) error {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.t.fd < 0 {
		return net.ErrClosed
	}
	f(uintptr(c.t.fd))
	return nil
}

func (threadRawConn) Read(func(fd uintptr) bool) error  { return errNotAvailable }
func (threadRawConn) Write(func(fd uintptr) bool) error { return errNotAvailable }

// threadOf is the stream thread that took c's socket over, or nil.
func threadOf(c net.Conn) *streamThread {
	t, _ := c.(*streamThread)
	return t
}
