package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNewRawAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		family int // 0: not dialled with the engine's own socket
	}{
		{"127.0.0.1:6379", unix.AF_INET},
		{"[::1]:6379", unix.AF_INET6},
		{"[::ffff:127.0.0.1]:6379", unix.AF_INET},
		{"localhost:6379", 0},
		{"[fe80::1%eth0]:6379", 0},
		{"127.0.0.1", 0},
	} {
		r := newRawAddr(tc.addr)
		if tc.family == 0 {
			assert.Nil(t, r, tc.addr)
			continue
		}
		require.NotNil(t, r, tc.addr)
		assert.Equal(t, tc.family, r.family, tc.addr)
		assert.Equal(t, tc.addr, r.addr)
		ap := netip.MustParseAddrPort(tc.addr)
		assert.Equal(t, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), r.addrPort(), tc.addr)
	}
}

// addrPort reads back the address connect(2) is given.
func (r *rawAddr) addrPort() netip.AddrPort {
	if r.family == unix.AF_INET {
		p := (*[2]byte)(unsafe.Pointer(&r.sa4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(r.sa4.Addr), binary.BigEndian.Uint16(p[:]))
	}
	p := (*[2]byte)(unsafe.Pointer(&r.sa6.Port))
	return netip.AddrPortFrom(netip.AddrFrom16(r.sa6.Addr), binary.BigEndian.Uint16(p[:]))
}

func FuzzNewRawAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:6379", "[::1]:0", "[::ffff:10.0.0.1]:65535", "a:1", "1.2.3.4", "[fe80::1%lo]:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := newRawAddr(s)
		ap, err := netip.ParseAddrPort(s)
		if err != nil || ap.Addr().Zone() != "" {
			assert.Nil(t, r)
			return
		}
		require.NotNil(t, r)
		assert.Equal(t, ap.Addr().Unmap(), r.addrPort().Addr())
		assert.Equal(t, ap.Port(), r.addrPort().Port())
	})
}

// respListener answers every read with a RESP nil bulk string.
func respListener(t *testing.T, network, addr string) string {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s listener on %s: %v", network, addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write([]byte("$-1\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// The engine's own socket: a net.Conn whose addresses, deadlines, errors
// and TCP_NODELAY behave as net's, over IPv4 and IPv6.
func TestRawDialConn(t *testing.T) {
	for _, tc := range []struct{ network, listen string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		t.Run(tc.network, func(t *testing.T) {
			addr := respListener(t, tc.network, tc.listen)
			r := newRawAddr(addr)
			require.NotNil(t, r)
			nc, stop, err := r.dial(context.Background(), time.Now().Add(time.Second))
			require.NoError(t, err)
			assert.Nil(t, stop, "a context that cannot end needs no hook")
			fc := nc.(*fileConn)
			assert.Equal(t, addr, nc.RemoteAddr().String())
			la, ok := nc.LocalAddr().(*net.TCPAddr)
			require.True(t, ok)
			assert.NotZero(t, la.Port)

			require.NoError(t, nc.SetDeadline(time.Now().Add(time.Second)))
			_, err = nc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
			require.NoError(t, err)
			assert.False(t, fc.noDelay, "a short command goes without TCP_NODELAY")
			assert.Equal(t, 0, noDelayOf(t, fc))
			buf := make([]byte, 16)
			n, err := nc.Read(buf)
			require.NoError(t, err)
			assert.Equal(t, "$-1\r\n", string(buf[:n]))

			_, err = nc.Write(make([]byte, noDelayAbove+1))
			require.NoError(t, err)
			assert.Equal(t, 1, noDelayOf(t, fc), "a long one sets it first")
			_, err = nc.Read(buf)
			require.NoError(t, err)

			require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
			_, err = nc.Read(buf)
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			assert.True(t, ne.Timeout())
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
			assert.Equal(t, ErrTimeout, kindFor(PhaseCommand, err))

			require.NoError(t, nc.Close())
			_, err = nc.Read(buf)
			assert.ErrorIs(t, err, net.ErrClosed)
			assert.Equal(t, ErrClosing, kindFor(PhaseCommand, err))
		})
	}
}

func noDelayOf(t *testing.T, c *fileConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var v int
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) }))
	require.NoError(t, gerr)
	return v
}

// A peer that closes: io.EOF, as from net.
func TestRawDialEOF(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	nc, _, err := newRawAddr(l.Addr().String()).dial(context.Background(), time.Now().Add(time.Second))
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(time.Second)))
	_, err = nc.Read(make([]byte, 8))
	assert.True(t, errors.Is(err, io.EOF), "%v", err)
}

// A refused connect is ECONNREFUSED in a *net.OpError, as net.Dialer's.
func TestRawDialRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, _, err = newRawAddr(addr).dial(context.Background(), time.Now().Add(time.Second))
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "dial", oe.Op)
	assert.Equal(t, ErrConnectRefused, kindFor(PhaseConnect, err))
}
