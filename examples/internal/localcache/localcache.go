// Package localcache starts a throwaway local cache server for the example
// tools when they are given no -addr, and points a cache.Endpoint at it. It is
// built only on the public cache and cachetest APIs.
package localcache

import (
	"context"
	"errors"
	"fmt"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// Start starts redis-server (or valkey-server) on a free loopback port shaped
// like ep (TLS, cluster, ACL user and password from ef) and rewrites ep to
// reach it: its address, the throwaway CA unless the user gave one or asked
// for no verification, and the ACL credentials. The caller closes the server.
func Start(ctx context.Context, ef *cachecli.EndpointFlags, ep *cache.Endpoint) (*cachetest.Server, error) {
	if ep.Credentials != nil {
		return nil, errors.New("IAM authentication needs a real ElastiCache endpoint: pass -addr")
	}
	srv, err := cachetest.Start(ctx, &cachetest.Config{
		TLS: ep.TLS, Cluster: ep.Cluster, User: ep.User, Password: ef.Password().Reveal(),
	})
	if errors.Is(err, cachetest.ErrNoServer) {
		return nil, fmt.Errorf("no -addr given and no local server to start: install one with `%s`, or pass -addr host:port", peertest.CacheInstallHint)
	}
	if err != nil {
		return nil, err
	}
	sep := srv.Endpoint()
	ep.Addr = sep.Addr
	if sep.TLS && len(ep.CACertPEM) == 0 && !ep.InsecureSkipVerify {
		ep.CACertPEM = sep.CACertPEM
	}
	if sep.User != "" {
		ep.User, ep.Password = sep.User, sep.Password
	}
	return srv, nil
}
