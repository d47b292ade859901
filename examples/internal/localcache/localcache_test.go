package localcache

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

func endpoint(t *testing.T, args ...string) (*cachecli.EndpointFlags, *cache.Endpoint) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	ef := cachecli.NewEndpointFlags(fs, "")
	require.NoError(t, fs.Parse(args))
	ep, err := ef.Endpoint()
	require.NoError(t, err)
	return ef, ep
}

func TestStartTLSWithUser(t *testing.T) {
	peertest.Binary(t, peertest.CacheInstallHint, "valkey-server", "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ef, ep := endpoint(t, "-tls", "-user", "probe", "-password", "pw-123")
	srv, err := Start(ctx, ef, ep)
	require.NoError(t, err)
	defer srv.Close()

	assert.Equal(t, srv.Addr, ep.Addr)
	assert.Equal(t, srv.Endpoint().CACertPEM, ep.CACertPEM, "the throwaway CA is trusted")
	assert.Equal(t, "probe", ep.User)

	p, err := cache.NewProber(ep)
	require.NoError(t, err)
	r, err := p.Probe(ctx)
	require.NoError(t, err)
	assert.Equal(t, "TLS 1.3", r.TLSVersion)
	assert.Positive(t, r.Phases[cache.PhaseAuth], "the ACL user authenticated")
}

func TestStartKeepsInsecure(t *testing.T) {
	peertest.Binary(t, peertest.CacheInstallHint, "valkey-server", "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ef, ep := endpoint(t, "-insecure")
	srv, err := Start(ctx, ef, ep)
	require.NoError(t, err)
	defer srv.Close()
	assert.Empty(t, ep.CACertPEM, "-insecure is not overridden with a CA")
	assert.True(t, ep.TLS)
}

func TestStartRefusesIAM(t *testing.T) {
	ef, ep := endpoint(t, "-iam-cache", "c1", "-user", "u1", "-iam-region", "us-east-1")
	_, err := Start(context.Background(), ef, ep)
	require.ErrorContains(t, err, "IAM authentication needs a real ElastiCache endpoint")
}
