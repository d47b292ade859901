package responsiveness

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResponsivenessRedialBounded: the server takes the established
// connection and never answers, and its accept queue is full, so every
// redial hangs in connect. Each redial must end at the timeout: a probe holds
// the connection's lock while it dials, and the run waits for its probes,
// so an unbounded one ran the run to the caller's deadline (15 s for a 1 s
// run).
func TestResponsivenessRedialBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-accepted:
			c.Close()
		default:
		}
	})
	// Once the established connection is in, a backlog of 0 and a few
	// connections nobody accepts leave the kernel dropping new SYNs.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	est := &estConn{cfg: &Config{network: "tcp", timeout: 100 * time.Millisecond}, addr: ln.Addr().String()}
	require.NoError(t, est.dial(ctx))
	defer est.close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) { _ = syscall.Listen(int(fd), 0) }))
	for range 4 {
		var d net.Dialer
		dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		if c, err := d.DialContext(dctx, "tcp", ln.Addr().String()); err == nil {
			t.Cleanup(func() { c.Close() })
		}
		dcancel()
	}
	start := time.Now()
	for range 3 {
		assert.Error(t, est.probe(ctx, latency.Request{}), "no reply, then no connection")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("3 probes with a 100 ms timeout took %v: a redial was not bounded", time.Since(start))
	}
	require.NoError(t, ctx.Err())
}

// Probes take their replies' kernel arrival and report the client's share:
// an established probe fills the request's send time and its reply's
// kernel arrival, a new-connection probe (whose dial is the server's time)
// only the arrival. A server that holds each reply 5 ms puts the arrival
// at least that far after the send.
func TestProbesFillSentAndArrived(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	const hold = 5 * time.Millisecond
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, wire.HeaderSize)
				for {
					if _, err := io.ReadFull(c, b); err != nil {
						return
					}
					h, _ := wire.DecodeHeader(b)
					time.Sleep(hold)
					wire.Header{Seq: h.Seq, Length: uint32(len(b))}.Put(b)
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	ctx := context.Background()
	cfg := &Config{network: "tcp", timeout: time.Second}
	est := &estConn{cfg: cfg, addr: ln.Addr().String()}
	require.NoError(t, est.dial(ctx))
	defer est.close()
	require.NotNil(t, est.tr.kr, "the probe takes kernel arrival times")
	for range 3 {
		var sent, arrived time.Time
		before := time.Now()
		require.NoError(t, est.probe(ctx, latency.Request{Sent: &sent, Arrived: &arrived}))
		after := time.Now()
		assert.False(t, sent.Before(before))
		assert.GreaterOrEqual(t, arrived.Sub(sent), hold-time.Millisecond, "kernel arrival after the server's hold")
		assert.False(t, arrived.After(after.Add(time.Millisecond)))
	}
	phases := map[string]*latency.Recorder{}
	for _, name := range []string{"connect", "request"} {
		phases[name], _ = latency.NewRecorder(nil)
	}
	var arrived time.Time
	before := time.Now()
	require.NoError(t, newConnProbe(ctx, cfg, ln.Addr().String(), phases, &arrived))
	assert.GreaterOrEqual(t, arrived.Sub(before), hold-time.Millisecond)
	assert.False(t, arrived.After(time.Now().Add(time.Millisecond)))
	assert.EqualValues(t, 1, phases["request"].Count())
}
