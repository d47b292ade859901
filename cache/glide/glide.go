// Package glide provides the valkey-glide v2 engine for cache's workload
// runner: the client library the field study used. It is the only netperfkit
// package that imports valkey-glide, which needs cgo; everything else in
// cache builds without it.
//
//	r, err := cache.Run(ctx, ep, &cache.WorkloadConfig{Engine: glide.Engine()})
//
// Running the same workload on glide and on cache's built-in resp engine
// separates the endpoint's latency from the client library's own overhead.
// glide exposes no connection phases, so the WithClientTrace hooks in the
// context are not called for its operations, and its client constructors
// take no context: creating a client is bounded by the Endpoint's
// ConnectTimeout, not by the caller's context.
//
// valkey-glide's core logger, global to the process, writes warnings
// (failed connections, reconnects) to standard output unless told
// otherwise. The engine silences it when it first opens, unless SetLog
// chose a level and a destination (a file, or standard output) before.
package glide

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	vglide "github.com/valkey-io/valkey-glide/go/v2"
	"github.com/valkey-io/valkey-glide/go/v2/config"
	"github.com/valkey-io/valkey-glide/go/v2/models"

	"github.com/netperfkit/netperfkit/cache"
)

// name is the engine's name in results (Engine().Name()).
const name = "glide"

// Engine returns the valkey-glide engine, for cache.WorkloadConfig.Engine.
func Engine() cache.Engine { return engine{} }

type engine struct{}

func (engine) Name() string { return name }

// glideCmd is what the workload needs from glide.Client and glide.ClusterClient.
type glideCmd interface {
	Get(ctx context.Context, key string) (models.Result[string], error)
	Set(ctx context.Context, key, value string) (string, error)
	UpdateConnectionPassword(ctx context.Context, password string, immediateAuth bool) (string, error)
	Close()
}

// credentialsPoll is how often a client asks Endpoint.Credentials for a new
// password: a quarter of cache/iam's 10-minute token refresh, so that a
// client holds a fresh token long before the old one's 15 minutes run out.
// Tests shorten it.
var credentialsPoll = 150 * time.Second

// refreshed, when set by a test, is called after a client took a fresh
// password.
var refreshed func()

// otelOnce initialises valkey-glide's OpenTelemetry singleton once, before
// any client runs a command: glide creates it lazily on every command's path
// without synchronisation (v2.5.3 GetOtelInstance), which is a data race when
// several goroutines send their first commands at once.
var otelOnce sync.Once

// Open builds one glide configuration for ep and returns the function that
// creates clients from it.
//
// Credentials that change (Endpoint.Credentials, such as cache/iam's
// ElastiCache IAM tokens, for node-based and serverless caches alike: glide's
// own IAM support never signs for ServerlessCache, valkey-glide issue 5248)
// are asked for when each client is created and given to glide as the
// user's password; every 150 s each client asks again and hands glide a
// changed password with UpdateConnectionPassword, so that a reconnect
// authenticates.
func (engine) Open(ctx context.Context, ep *cache.Endpoint) (func(context.Context) (cache.Client, error), error) {
	if ep == nil {
		return nil, errors.New("glide: nil Endpoint")
	}
	quietLog()
	otelOnce.Do(func() { vglide.GetOtelInstance() })
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
	f := &factory{addr: ep.Addr, dynamic: ep.Credentials, poll: credentialsPoll}
	if f.dynamic == nil {
		f.creds = credentials(ep)
	}
	if ep.Cluster {
		f.dial = clusterDialer(ep, addr)
	} else {
		f.dial = standaloneDialer(ep, addr)
	}
	return f.newClient, nil
}

// clusterDialer and standaloneDialer build a configuration per client
// (credentials may change: IAM tokens); glide's constructors take no context
// and are bounded by the connection timeout set here.
func clusterDialer(ep *cache.Endpoint, addr *config.NodeAddress) func(*config.ServerCredentials) (glideCmd, error) {
	return func(creds *config.ServerCredentials) (glideCmd, error) {
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
		c, err := vglide.NewClusterClient(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func standaloneDialer(ep *cache.Endpoint, addr *config.NodeAddress) func(*config.ServerCredentials) (glideCmd, error) {
	return func(creds *config.ServerCredentials) (glideCmd, error) {
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

// credentials returns glide's form of user and password, nil for none.
func credentials(ep *cache.Endpoint) *config.ServerCredentials {
	return userPassword(ep.User, ep.Password)
}

func userPassword(user string, pw cache.Secret) *config.ServerCredentials {
	switch {
	case pw != "" && user != "":
		return config.NewServerCredentials(user, pw.Reveal())
	case pw != "":
		return config.NewServerCredentialsWithDefaultUsername(pw.Reveal())
	}
	return nil
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
	// dial creates and connects one client with creds.
	dial func(creds *config.ServerCredentials) (glideCmd, error)
	// creds are the static credentials (nil: none).
	creds *config.ServerCredentials
	// dynamic is Endpoint.Credentials (nil: static); each client asks it
	// for a new password every poll.
	dynamic func(context.Context) (string, cache.Secret, error)
	poll    time.Duration
}

func (f *factory) newClient(ctx context.Context) (cache.Client, error) {
	creds := f.creds
	var pw cache.Secret
	if f.dynamic != nil {
		var (
			user string
			err  error
		)
		if user, pw, err = f.dynamic(ctx); err != nil {
			return nil, &cache.Error{Phase: cache.PhaseAuth, Kind: cache.ErrAuth, Err: fmt.Errorf("glide: credentials: %w", err)}
		}
		creds = userPassword(user, pw)
	}
	c, err := f.dial(creds)
	if err != nil {
		return nil, &cache.Error{Phase: cache.PhaseConnect, Kind: createKind(ctx, err), Addr: f.addr, Err: err}
	}
	gc := &client{c: c, addr: f.addr}
	if f.dynamic != nil {
		gc.stop = f.keepFresh(c, pw)
	}
	return gc, nil
}

// keepFresh gives c a changed password with UpdateConnectionPassword (and
// AUTH on its connections) whenever Endpoint.Credentials has a new one,
// until stop.
func (f *factory) keepFresh(c glideCmd, current cache.Secret) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(f.poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, tok, err := f.dynamic(ctx)
			if err != nil || tok == current {
				continue
			}
			if _, err := c.UpdateConnectionPassword(ctx, tok.Reveal(), true); err == nil {
				current = tok
				if refreshed != nil {
					refreshed()
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

type client struct {
	c    glideCmd
	addr string
	stop func() // stops the token refresh; nil without one
}

func (g *client) Get(ctx context.Context, key string) error {
	_, err := g.c.Get(ctx, key)
	return g.wrap(ctx, err)
}

func (g *client) Set(ctx context.Context, key, value string) error {
	_, err := g.c.Set(ctx, key, value)
	return g.wrap(ctx, err)
}

func (g *client) Close() {
	if g.stop != nil {
		g.stop()
	}
	g.c.Close()
}

func (g *client) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return &cache.Error{Phase: cache.PhaseCommand, Kind: kindOf(ctx, err), Addr: g.addr, Err: err}
}

// createKind classifies a failed client creation: by glide's typed errors
// first, then, within a connection or closing error, by its text, since
// glide reports its connection budget running out ("connection attempt
// timed out": Endpoint.ConnectTimeout plus glide's own 500 ms) as one of
// those. cache.ErrConnectTimeout is the budget: cache.Causes counts it as
// client_budget. glide's own retries inside the budget cannot be counted
// from outside: its statistics have no retry counter.
func createKind(ctx context.Context, err error) cache.ErrorKind {
	var (
		te *vglide.TimeoutError
		ce *vglide.ConnectionError
		cl *vglide.ClosingError
	)
	switch {
	case ctx.Err() != nil:
		return cache.ErrCanceled
	case errors.As(err, &te):
		return cache.ErrConnectTimeout
	case (errors.As(err, &ce) || errors.As(err, &cl)) && strings.Contains(err.Error(), "timed out"):
		return cache.ErrConnectTimeout
	}
	return kindOf(ctx, err)
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
