package cachetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestServerEnvChoosesBinary: NETPERFKIT_CACHE_SERVER picks the server of
// every Start without a Binary, so a suite runs against valkey 8 as well as
// the redis-server on PATH; a cluster finds valkey-cli beside it.
func TestServerEnvChoosesBinary(t *testing.T) {
	valkey := peertest.Valkey(t)
	t.Setenv("NETPERFKIT_CACHE_SERVER", valkey)
	s := cachetest.NewServer(t, nil)
	assert.Equal(t, valkey, s.Binary)
	c := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	assert.Equal(t, valkey, c.Binary)
	require.Len(t, c.Addrs, 3)
	p, err := cache.NewProber(c.Endpoint())
	require.NoError(t, err)
	sum, err := p.Run(context.Background(), &cache.ProbeConfig{Probes: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Succeeded)
}
