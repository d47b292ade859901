//go:build linux

package latency

import (
	"context"
	"net"
	"testing"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server that answers every message with a flood of copies overflows the
// client's receive buffer: the kernel drops what does not fit, and the
// result says how many from the socket's own counter.
func TestPingPongSocketDrops(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			h, err := wire.DecodeHeader(buf[:n])
			if err != nil || h.Flags&wire.FlagPong == 0 {
				continue // warm-up messages get no reply
			}
			h.Flags &^= wire.FlagClient
			h.Put(buf[:n])
			for range 3000 {
				_, _ = pc.WriteTo(buf[:n], from)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := PingPong(ctx, pc.LocalAddr().String(), &PingPongConfig{Count: 5, ReadTimeout: 2 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, res.SocketDrops, "no counter: %s", res.NoSocketDrops)
	assert.Empty(t, res.NoSocketDrops)
	assert.Positive(t, *res.SocketDrops, "3000 copies of each reply overflow the receive buffer")

	b, err := res.MarshalJSON()
	require.NoError(t, err)
	var back PingPongResult
	require.NoError(t, back.UnmarshalJSON(b))
	require.NotNil(t, back.SocketDrops)
	assert.Equal(t, *res.SocketDrops, *back.SocketDrops)
}

// An echo server that keeps up drops nothing: the counter is there and 0.
func TestPingPongNoSocketDrops(t *testing.T) {
	srv, err := NewServer(nil)
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = srv.ServePacket(ctx, pc) }()
	res, err := PingPong(ctx, pc.LocalAddr().String(), &PingPongConfig{Count: 200})
	require.NoError(t, err)
	require.NotNil(t, res.SocketDrops, "no counter: %s", res.NoSocketDrops)
	assert.Zero(t, *res.SocketDrops)
}
