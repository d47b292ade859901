package responsiveness

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResponsivenessRedialBounded: the server takes the established
// connection and never answers, and its accept queue is full, so every
// redial hangs in connect. Each redial must end at Timeout: a probe holds
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
	est := &estConn{cfg: &Config{Network: "tcp", Timeout: 100 * time.Millisecond}, addr: ln.Addr().String()}
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
