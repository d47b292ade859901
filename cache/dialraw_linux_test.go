package cache_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// A connect-per-operation client on the engine's own socket reports the
// phases net.Dialer's did, commands included, and its connections work.
func TestConnectPerOpOwnSocket(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	newClient, err := cache.NewConnectPerOpClient(endpointFor(s))
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		phases []cache.PhaseInfo
	)
	ctx, cancel := context.WithCancel(cache.WithClientTrace(context.Background(), nil, func(i cache.PhaseInfo) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, i)
	}))
	defer cancel()
	c, err := newClient(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, "k31", string(make([]byte, 4096)))) // sets TCP_NODELAY first
	require.NoError(t, c.Get(ctx, "k31"))
	c.Close()
	require.Len(t, phases, 3)
	assert.Equal(t, cache.PhaseConnect, phases[0].Phase)
	assert.Equal(t, s.Addr, phases[0].Addr)
	assert.Positive(t, phases[0].Duration)
	for _, p := range phases {
		assert.NoError(t, p.Err)
	}
	assert.Equal(t, []cache.Phase{cache.PhaseCommand, cache.PhaseCommand}, []cache.Phase{phases[1].Phase, phases[2].Phase})
}

// The engine's own connect ends by ConnectTimeout as ErrConnectTimeout, by
// ctx's deadline as ErrConnectTimeout wrapping context.DeadlineExceeded,
// and at once when ctx is cancelled.
func TestConnectPerOpOwnSocketTimeout(t *testing.T) {
	addr := fullBacklogListener(t)
	newClient, err := cache.NewConnectPerOpClient(&cache.Endpoint{Addr: addr, ConnectTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	_, err = newClient(context.Background())
	require.ErrorIs(t, err, cache.ErrConnectTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)

	newClient, err = cache.NewConnectPerOpClient(&cache.Endpoint{Addr: addr, ConnectTimeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = newClient(ctx)
	require.ErrorIs(t, err, cache.ErrConnectTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	_, err = newClient(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 5*time.Second, "the cancel closes the socket")
}

// A refused connect is ErrConnectRefused, as with net.Dialer.
func TestConnectPerOpOwnSocketRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	newClient, err := cache.NewConnectPerOpClient(&cache.Endpoint{Addr: addr})
	require.NoError(t, err)
	_, err = newClient(context.Background())
	require.ErrorIs(t, err, cache.ErrConnectRefused)
	var ce *cache.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cache.PhaseConnect, ce.Phase)
}
