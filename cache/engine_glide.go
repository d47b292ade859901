package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	glide "github.com/valkey-io/valkey-glide/go/v2"
	"github.com/valkey-io/valkey-glide/go/v2/config"
	"github.com/valkey-io/valkey-glide/go/v2/models"
)

// glideEngine creates valkey-glide v2 clients from one configuration, built
// once.
type glideEngine struct {
	addr string
	// dial creates and connects one client.
	dial func() (glideCmd, error)
	// credErr is why the credentials could not be built; newClient reports
	// it.
	credErr error
}

// glideCmd is what the workload needs from glide.Client and glide.ClusterClient.
type glideCmd interface {
	Get(ctx context.Context, key string) (models.Result[string], error)
	Set(ctx context.Context, key, value string) (string, error)
	Close()
}

// glideOtelOnce initialises valkey-glide's OpenTelemetry singleton once,
// before any client runs a command: glide creates it lazily on every
// command's path without synchronisation (v2.5.3 GetOtelInstance), which is a
// data race when several goroutines send their first commands at once.
var glideOtelOnce sync.Once

func newGlideEngine(ep *Endpoint, w *WorkloadConfig) (*glideEngine, error) {
	glideOtelOnce.Do(func() { glide.GetOtelInstance() })
	if ep.IAM != nil && ep.IAM.Serverless {
		return nil, errors.New("cache: glide cannot authenticate to serverless caches with IAM " +
			"(it never adds ResourceType=ServerlessCache, valkey-glide issue 5248); use the resp engine")
	}
	if ep.ServerName != "" {
		return nil, errors.New("cache: glide cannot set the TLS server name; use the resp engine")
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
	creds, credErr := glideCredentials(ep)
	tlsCfg := glideTLSConfig(ep)
	e := &glideEngine{addr: ep.Addr, credErr: credErr}
	// glide's constructors take no context; they are bounded by the
	// connection timeout set here.
	if ep.Cluster {
		cfg := config.NewClusterClientConfiguration().WithAddress(addr).
			WithUseTLS(ep.TLS).WithRequestTimeout(w.RequestTimeout)
		adv := config.NewAdvancedClusterClientConfiguration().WithConnectionTimeout(w.ConnectTimeout)
		if tlsCfg != nil {
			adv = adv.WithTlsConfiguration(tlsCfg)
		}
		cfg = cfg.WithAdvancedConfiguration(adv)
		if creds != nil {
			cfg = cfg.WithCredentials(creds)
		}
		e.dial = func() (glideCmd, error) {
			c, err := glide.NewClusterClient(cfg)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	} else {
		cfg := config.NewClientConfiguration().WithAddress(addr).
			WithUseTLS(ep.TLS).WithRequestTimeout(w.RequestTimeout)
		adv := config.NewAdvancedClientConfiguration().WithConnectionTimeout(w.ConnectTimeout)
		if tlsCfg != nil {
			adv = adv.WithTlsConfiguration(tlsCfg)
		}
		cfg = cfg.WithAdvancedConfiguration(adv)
		if creds != nil {
			cfg = cfg.WithCredentials(creds)
		}
		e.dial = func() (glideCmd, error) {
			c, err := glide.NewClient(cfg)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	return e, nil
}

func splitPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("cache: endpoint address: %w", err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("cache: endpoint port %q: %w", ps, err)
	}
	return host, port, nil
}

func glideCredentials(ep *Endpoint) (*config.ServerCredentials, error) {
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

func glideTLSConfig(ep *Endpoint) *config.TlsConfiguration {
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

func (e *glideEngine) newClient(ctx context.Context) (client, error) {
	if e.credErr != nil {
		return nil, &Error{Phase: PhaseAuth, Kind: ErrAuth, Err: e.credErr}
	}
	c, err := e.dial()
	if err != nil {
		return nil, &Error{Phase: PhaseConnect, Kind: glideKind(ctx, err), Addr: e.addr, Err: err}
	}
	return &glideClient{c: c, addr: e.addr}, nil
}

type glideClient struct {
	c    glideCmd
	addr string
}

func (g *glideClient) get(ctx context.Context, key string) error {
	_, err := g.c.Get(ctx, key)
	return g.wrap(ctx, err)
}

func (g *glideClient) set(ctx context.Context, key, value string) error {
	_, err := g.c.Set(ctx, key, value)
	return g.wrap(ctx, err)
}

func (g *glideClient) close() { g.c.Close() }

func (g *glideClient) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Phase: PhaseCommand, Kind: glideKind(ctx, err), Addr: g.addr, Err: err}
}

// glideKind maps glide's error types onto the field study's classes.
func glideKind(ctx context.Context, err error) ErrorKind {
	var (
		te *glide.TimeoutError
		ce *glide.ConnectionError
		de *glide.DisconnectError
		cl *glide.ClosingError
	)
	switch {
	case ctx.Err() != nil:
		return ErrCanceled
	case errors.As(err, &te):
		return ErrTimeout
	case errors.As(err, &ce), errors.As(err, &de):
		return ErrConnection
	case errors.As(err, &cl):
		return ErrClosing
	case strings.Contains(err.Error(), "in recovery"):
		// glide reports "Connection in recovery" as a plain error with no
		// type of its own (valkey-glide issue 7169): its text is all there is.
		return ErrRecovery
	}
	return ErrServer
}
