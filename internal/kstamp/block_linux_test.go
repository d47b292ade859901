//go:build linux

package kstamp

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// socketFD is c's socket's descriptor (valid while c is open).
func socketFD(t *testing.T, c net.Conn) int {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	fd := -1
	require.NoError(t, raw.Control(func(s uintptr) { fd = int(s) }))
	return fd
}

// EnableBlock leaves the socket blocking, with receive and send timeouts
// of pollSlice, and in no epoll set (the netpoller's held it before).
func TestEnableBlockTakesTheSocketOutOfTheNetpoller(t *testing.T) {
	c, _ := pair(t)
	fd := socketFD(t, c)
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err)
	require.NotZero(t, fl&unix.O_NONBLOCK, "Go's sockets start non-blocking")

	r, ok := New(c)
	require.True(t, ok)
	require.NoError(t, r.EnableBlock())

	fl, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.Zero(t, fl&unix.O_NONBLOCK, "still non-blocking")
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, opt)
		require.NoError(t, err)
		// the kernel keeps it in ticks: pollSlice rounded up to one
		assert.GreaterOrEqual(t, time.Duration(tv.Nano()), pollSlice, "option %d", opt)
		assert.Less(t, time.Duration(tv.Nano()), 2*pollSlice, "option %d", opt)
	}
	assert.ErrorContains(t, leaveEpoll(fd), "no epoll set watches the socket")
	// the connection still closes cleanly (the runtime's own removal from
	// its epoll set finds nothing)
	assert.NoError(t, c.Close())
}

// A blocking Reader keeps its own deadline: a passed one fails Read and a
// large Send at once, a later one fails a Read that gets nothing and a
// Send to a peer that reads nothing, and the zero time waits for the data.
func TestBlockingReaderDeadline(t *testing.T) {
	for _, txs := range []bool{false, true} {
		c, s := pair(t)
		r, ok := New(c)
		require.True(t, ok)
		require.NoError(t, r.EnableBlock())
		if txs {
			tx, err := EnablePerSend(c)
			require.NoError(t, err)
			r.TX = tx
		}
		buf := make([]byte, 64)

		r.SetDeadline(time.Now().Add(-time.Second))
		_, err := r.Read(buf)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "txs %v", txs)

		r.SetDeadline(time.Now().Add(3 * pollSlice))
		start := time.Now()
		_, err = r.Read(buf)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "txs %v", txs)
		assert.GreaterOrEqual(t, time.Since(start), 3*pollSlice, "failed before its deadline")

		// a send the peer never reads fills the socket, then fails
		r.SetDeadline(time.Now().Add(5 * pollSlice))
		_, err = r.Send(bytes.Repeat([]byte("x"), 64<<20), false, nil)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "txs %v", txs)

		r.SetDeadline(time.Time{})
		go func() {
			_ = s.SetReadDeadline(time.Now().Add(10 * pollSlice))
			_, _ = io.Copy(io.Discard, s) // what the send left, until the deadline
			_, _ = s.Write([]byte("late"))
		}()
		n, err := r.Read(buf)
		if assert.NoError(t, err, "txs %v", txs) {
			assert.Equal(t, "late", string(buf[:n]))
		}
	}
}

// A Read blocked when the connection closes fails; so do Read and Send
// after it.
func TestBlockingReaderClose(t *testing.T) {
	c, _ := pair(t)
	r, ok := New(c)
	require.True(t, ok)
	require.NoError(t, r.EnableBlock())
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(2 * pollSlice) // blocked by now
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(time.Minute):
		t.Fatal("a blocked Read did not return after its connection closed")
	}
	_, err := r.Read(make([]byte, 8))
	assert.ErrorIs(t, err, net.ErrClosed)
	_, err = r.Send([]byte("x"), false, nil)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// The signals a blocked receive takes (every collection's stop of the
// world preempts it) interrupt it without ending the Read: it returns the
// data that comes afterwards, and the collections finish meanwhile.
func TestBlockingReaderReadsThroughSignals(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a blocking Reader is used only with another P")
	}
	c, s := pair(t)
	r, ok := New(c)
	require.True(t, ok)
	require.NoError(t, r.EnableBlock())
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		buf := make([]byte, 8)
		n, err := r.Read(buf)
		done <- result{buf[:n], err}
	}()
	time.Sleep(2 * pollSlice)
	for range 5 {
		runtime.GC()
	}
	select {
	case res := <-done:
		t.Fatalf("Read returned %q, %v before any data", res.b, res.err)
	default:
	}
	_, err := s.Write([]byte("data"))
	require.NoError(t, err)
	select {
	case res := <-done:
		require.NoError(t, res.err)
		assert.Equal(t, "data", string(res.b))
	case <-time.After(time.Minute):
		t.Fatal("Read did not return the data")
	}
}
