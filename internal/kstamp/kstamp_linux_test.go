//go:build linux

package kstamp

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-acc
	require.NotNil(t, server)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// The data arrives whole, and its kernel arrival lies between the write
// and the read's return.
func TestReaderReadsWithKernelArrival(t *testing.T) {
	c, s := pair(t)
	r, ok := New(c)
	require.True(t, ok)
	before := time.Now()
	_, err := s.Write([]byte("+PONG\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	after := time.Now()
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(buf[:n]))
	arr := r.Arrived()
	assert.False(t, arr.Round(0).Before(before.Round(0)), "arrived %v before the write at %v", arr, before)
	assert.False(t, arr.Round(0).After(after.Round(0)), "arrived %v after the read returned at %v", arr, after)
}

func TestReaderDeadlineCloseAndEOF(t *testing.T) {
	c, s := pair(t)
	r, ok := New(c)
	require.True(t, ok)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := r.Read(make([]byte, 8))
	assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "%v", err)

	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, s.Close())
	_, err = r.Read(make([]byte, 8))
	assert.ErrorIs(t, err, io.EOF)

	n, err := r.Read(nil)
	assert.Zero(t, n)
	assert.NoError(t, err)

	done := make(chan error, 1)
	c2, _ := pair(t)
	r2, ok := New(c2)
	require.True(t, ok)
	go func() {
		_, err := r2.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, c2.Close())
	assert.ErrorIs(t, <-done, net.ErrClosed, "a Close ends a blocked Read")
}

func TestNewRefusesWhatHasNoSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_, ok := New(a)
	assert.False(t, ok)
	_, ok = New(nil)
	assert.False(t, ok)
}

func TestStamp(t *testing.T) {
	ts := unix.Timespec{Sec: 1700000000, Nsec: 123456789}
	b := unix.UnixCredentials(&unix.Ucred{Pid: 1}) // another message first
	oob := append(b, stampMessage(ts)...)
	got, ok := Stamp(oob)
	require.True(t, ok)
	assert.Equal(t, time.Unix(1700000000, 123456789), got)
	_, ok = Stamp(b)
	assert.False(t, ok)
	_, ok = Stamp(oob[:3])
	assert.False(t, ok)
}

func stampMessage(ts unix.Timespec) []byte {
	b := make([]byte, unix.CmsgSpace(16))
	h := (*unix.Cmsghdr)(unsafePointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(16))
	*(*unix.Timespec)(unsafePointer(&b[unix.CmsgLen(0)])) = ts
	return b
}

func FuzzStamp(f *testing.F) {
	f.Add(stampMessage(unix.Timespec{Sec: 1, Nsec: 2}))
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, oob []byte) {
		// Control messages are 8-aligned in the kernel's buffer.
		buf := make([]byte, len(oob), len(oob)+8)
		copy(buf, oob)
		_, _ = Stamp(buf)
	})
}
