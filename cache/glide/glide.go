// Package glide provides the valkey-glide v2 engine for cache's workload
// runner: the client library the field study used. It is the only netperfkit
// package that imports valkey-glide, which needs cgo; everything else in
// cache builds without it.
//
//	r, err := cache.Run(ctx, ep, &cache.WorkloadConfig{Engine: glide.Engine()})
//
// Running the same workload on glide and on cache's built-in resp engine
// separates the endpoint's latency from the client library's own overhead.
// glide exposes no connection phases, so the ClientTrace hooks in the
// context are not called for its operations, and its client constructors
// take no context: creating a client is bounded by the Endpoint's
// ConnectTimeout, not by the caller's context.
package glide

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	vglide "github.com/valkey-io/valkey-glide/go/v2"
	"github.com/valkey-io/valkey-glide/go/v2/config"
	"github.com/valkey-io/valkey-glide/go/v2/models"

	"github.com/netperfkit/netperfkit/cache"
)

// Name is the engine's name in results.
const Name = "glide"

// Engine returns the valkey-glide engine, for cache.WorkloadConfig.Engine.
func Engine() cache.Engine { return engine{} }

type engine struct{}

func (engine) Name() string { return Name }

// glideCmd is what the workload needs from glide.Client and glide.ClusterClient.
type glideCmd interface {
	Get(ctx context.Context, key string) (models.Result[string], error)
	Set(ctx context.Context, key, value string) (string, error)
	Close()
}

// otelOnce initialises valkey-glide's OpenTelemetry singleton once, before
// any client runs a command: glide creates it lazily on every command's path
// without synchronisation (v2.5.3 GetOtelInstance), which is a data race when
// several goroutines send their first commands at once.
var otelOnce sync.Once

// Open builds one glide configuration for ep and returns the function that
// creates clients from it.
func (engine) Open(_ context.Context, ep *cache.Endpoint) (func(context.Context) (cache.Client, error), error) {
	otelOnce.Do(func() { vglide.GetOtelInstance() })
	if ep.IAM != nil && ep.IAM.Serverless {
		return nil, errors.New("glide: cannot authenticate to serverless caches with IAM " +
			"(it never adds ResourceType=ServerlessCache, valkey-glide issue 5248); use the resp engine")
	}
	if ep.ServerName != "" {
		return nil, errors.New("glide: cannot set the TLS server name; use the resp engine")
	}
	host, port, err := splitPort(ep.Addr)
	if err != nil {
		return nil, err
	}
	// glide fills in a missing host or port while converting a configuration
	// (NodeAddress.toProtobuf, v2.5.3), its only write to it: filling them
	// here makes the conversion read-only, so one configuration serves every
	// client, concurrent NewClient calls included.
	if host == "" {
		host = config.DefaultHost
	}
	if port == 0 {
		port = config.DefaultPort
	}
	addr := &config.NodeAddress{Host: host, Port: port}
	creds, credErr := credentials(ep)
	f := &factory{addr: ep.Addr, credErr: credErr}
	if ep.Cluster {
		f.dial = clusterDialer(ep, addr, creds)
	} else {
		f.dial = standaloneDialer(ep, addr, creds)
	}
	return f.newClient, nil
}

// clusterDialer and standaloneDialer build the configuration once; glide's
// constructors take no context and are bounded by the connection timeout set
// here.
func clusterDialer(ep *cache.Endpoint, addr *config.NodeAddress, creds *config.ServerCredentials) func() (glideCmd, error) {
	cfg := config.NewClusterClientConfiguration().WithAddress(addr).
		WithUseTLS(ep.TLS).WithRequestTimeout(ep.RequestTimeout)
	adv := config.NewAdvancedClusterClientConfiguration().WithConnectionTimeout(ep.ConnectTimeout)
	if t := tlsConfig(ep); t != nil {
		adv = adv.WithTlsConfiguration(t)
	}
	cfg = cfg.WithAdvancedConfiguration(adv)
	if creds != nil {
		cfg = cfg.WithCredentials(creds)
	}
	return func() (glideCmd, error) {
		c, err := vglide.NewClusterClient(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func standaloneDialer(ep *cache.Endpoint, addr *config.NodeAddress, creds *config.ServerCredentials) func() (glideCmd, error) {
	cfg := config.NewClientConfiguration().WithAddress(addr).
		WithUseTLS(ep.TLS).WithRequestTimeout(ep.RequestTimeout)
	adv := config.NewAdvancedClientConfiguration().WithConnectionTimeout(ep.ConnectTimeout)
	if t := tlsConfig(ep); t != nil {
		adv = adv.WithTlsConfiguration(t)
	}
	cfg = cfg.WithAdvancedConfiguration(adv)
	if creds != nil {
		cfg = cfg.WithCredentials(creds)
	}
	return func() (glideCmd, error) {
		c, err := vglide.NewClient(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func splitPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("glide: endpoint address: %w", err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("glide: endpoint port %q: %w", ps, err)
	}
	return host, port, nil
}

func credentials(ep *cache.Endpoint) (*config.ServerCredentials, error) {
	switch {
	case ep.IAM != nil:
		return config.NewServerCredentialsWithIam(ep.User,
			config.NewIamAuthConfig(strings.ToLower(ep.IAM.CacheName), config.ElastiCache, ep.IAM.Region))
	case ep.Password != "" && ep.User != "":
		return config.NewServerCredentials(ep.User, ep.Password.Reveal()), nil
	case ep.Password != "":
		return config.NewServerCredentialsWithDefaultUsername(ep.Password.Reveal()), nil
	}
	return nil, nil
}

func tlsConfig(ep *cache.Endpoint) *config.TlsConfiguration {
	if !ep.TLS || (len(ep.CACertPEM) == 0 && !ep.InsecureSkipVerify) {
		return nil
	}
	t := config.NewTlsConfiguration()
	if len(ep.CACertPEM) > 0 {
		t = t.WithRootCertificates(ep.CACertPEM)
	}
	if ep.InsecureSkipVerify {
		t = t.WithInsecureTLS(true)
	}
	return t
}

// factory creates glide clients from one configuration.
type factory struct {
	addr string
	// dial creates and connects one client.
	dial func() (glideCmd, error)
	// credErr is why the credentials could not be built; newClient reports
	// it.
	credErr error
}

func (f *factory) newClient(ctx context.Context) (cache.Client, error) {
	if f.credErr != nil {
		return nil, &cache.Error{Phase: cache.PhaseAuth, Kind: cache.ErrAuth, Err: f.credErr}
	}
	c, err := f.dial()
	if err != nil {
		return nil, &cache.Error{Phase: cache.PhaseConnect, Kind: kindOf(ctx, err), Addr: f.addr, Err: err}
	}
	return &client{c: c, addr: f.addr}, nil
}

type client struct {
	c    glideCmd
	addr string
}

func (g *client) Get(ctx context.Context, key string) error {
	_, err := g.c.Get(ctx, key)
	return g.wrap(ctx, err)
}

func (g *client) Set(ctx context.Context, key, value string) error {
	_, err := g.c.Set(ctx, key, value)
	return g.wrap(ctx, err)
}

func (g *client) Close() { g.c.Close() }

func (g *client) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return &cache.Error{Phase: cache.PhaseCommand, Kind: kindOf(ctx, err), Addr: g.addr, Err: err}
}

// kindOf maps glide's error types onto the field study's classes.
func kindOf(ctx context.Context, err error) cache.ErrorKind {
	var (
		te *vglide.TimeoutError
		ce *vglide.ConnectionError
		de *vglide.DisconnectError
		cl *vglide.ClosingError
	)
	switch {
	case ctx.Err() != nil:
		return cache.ErrCanceled
	case errors.As(err, &te):
		return cache.ErrTimeout
	case errors.As(err, &ce), errors.As(err, &de):
		return cache.ErrConnection
	case errors.As(err, &cl):
		return cache.ErrClosing
	case strings.Contains(err.Error(), "in recovery"):
		// glide reports "Connection in recovery" as a plain error with no
		// type of its own (valkey-glide issue 7169): its text is all there is.
		return cache.ErrRecovery
	}
	return cache.ErrServer
}
