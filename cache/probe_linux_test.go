package cache_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

// fullBacklogListener returns the address of a loopback listener whose
// accept queue is full: its backlog is cut to 0 and filled with connections
// that are never accepted, so the kernel drops further SYNs and a connect
// hangs. It skips the test when the kernel completes or refuses connects
// anyway (tcp_abort_on_overflow, a backlog it will not shrink).
func fullBacklogListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	rc, err := l.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	var lerr error
	// A second listen(2) on a listening socket changes its backlog.
	require.NoError(t, rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }))
	require.NoError(t, lerr)
	addr := l.Addr().String()
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return addr // this SYN was dropped: the queue is full
		}
		t.Skipf("the kernel does not drop SYNs to a full accept queue here: %v", err)
	}
	t.Skip("the kernel completed every connect to a listener with backlog 0: cannot make a connect hang on loopback")
	return ""
}

// End to end on loopback: a connect that hangs on a full accept queue is
// ErrConnectTimeout in the connect phase, whether the endpoint's
// ConnectTimeout or ctx's deadline ends it (with ctx's deadline the error
// wraps context.DeadlineExceeded too).
func TestProbeConnectTimeout(t *testing.T) {
	addr := fullBacklogListener(t)

	p, err := cache.NewProber(&cache.Endpoint{Addr: addr, ConnectTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	r, err := p.Probe(context.Background())
	require.ErrorIs(t, err, cache.ErrConnectTimeout)
	assert.Equal(t, cache.PhaseConnect, errPhase(r))
	assert.Zero(t, r.Phases[cache.PhaseCommand])

	p, err = cache.NewProber(&cache.Endpoint{Addr: addr, ConnectTimeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r, err = p.Probe(ctx)
	require.ErrorIs(t, err, cache.ErrConnectTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, cache.PhaseConnect, errPhase(r))
}
