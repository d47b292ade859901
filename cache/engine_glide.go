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

// glideEngine creates valkey-glide v2 clients.
type glideEngine struct {
	ep *Endpoint
	w  *WorkloadConfig
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
	if _, _, err := splitPort(ep.Addr); err != nil {
		return nil, err
	}
	return &glideEngine{ep: ep, w: w}, nil
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

func (e *glideEngine) credentials() (*config.ServerCredentials, error) {
	switch {
	case e.ep.IAM != nil:
		return config.NewServerCredentialsWithIam(e.ep.User,
			config.NewIamAuthConfig(strings.ToLower(e.ep.IAM.CacheName), config.ElastiCache, e.ep.IAM.Region))
	case e.ep.Password != "" && e.ep.User != "":
		return config.NewServerCredentials(e.ep.User, e.ep.Password.Reveal()), nil
	case e.ep.Password != "":
		return config.NewServerCredentialsWithDefaultUsername(e.ep.Password.Reveal()), nil
	}
	return nil, nil
}

func (e *glideEngine) tlsConfig() *config.TlsConfiguration {
	if !e.ep.TLS || (len(e.ep.CACertPEM) == 0 && !e.ep.InsecureSkipVerify) {
		return nil
	}
	t := config.NewTlsConfiguration()
	if len(e.ep.CACertPEM) > 0 {
		t = t.WithRootCertificates(e.ep.CACertPEM)
	}
	if e.ep.InsecureSkipVerify {
		t = t.WithInsecureTLS(true)
	}
	return t
}

func (e *glideEngine) newClient(ctx context.Context) (client, error) {
	host, port, _ := splitPort(e.ep.Addr)
	addr := &config.NodeAddress{Host: host, Port: port}
	creds, err := e.credentials()
	if err != nil {
		return nil, &Error{Phase: PhaseAuth, Kind: ErrAuth, Err: err}
	}
	tlsCfg := e.tlsConfig()
	var c glideCmd
	// glide's constructors take no context; they are bounded by the
	// connection timeout set here.
	if e.ep.Cluster {
		cfg := config.NewClusterClientConfiguration().WithAddress(addr).
			WithUseTLS(e.ep.TLS).WithRequestTimeout(e.w.RequestTimeout)
		adv := config.NewAdvancedClusterClientConfiguration().WithConnectionTimeout(e.w.ConnectTimeout)
		if tlsCfg != nil {
			adv = adv.WithTlsConfiguration(tlsCfg)
		}
		cfg = cfg.WithAdvancedConfiguration(adv)
		if creds != nil {
			cfg = cfg.WithCredentials(creds)
		}
		var cc *glide.ClusterClient
		cc, err = glide.NewClusterClient(cfg)
		if err == nil {
			c = cc
		}
	} else {
		cfg := config.NewClientConfiguration().WithAddress(addr).
			WithUseTLS(e.ep.TLS).WithRequestTimeout(e.w.RequestTimeout)
		adv := config.NewAdvancedClientConfiguration().WithConnectionTimeout(e.w.ConnectTimeout)
		if tlsCfg != nil {
			adv = adv.WithTlsConfiguration(tlsCfg)
		}
		cfg = cfg.WithAdvancedConfiguration(adv)
		if creds != nil {
			cfg = cfg.WithCredentials(creds)
		}
		var sc *glide.Client
		sc, err = glide.NewClient(cfg)
		if err == nil {
			c = sc
		}
	}
	if err != nil {
		return nil, &Error{Phase: PhaseConnect, Kind: glideKind(ctx, err), Addr: e.ep.Addr, Err: err}
	}
	return &glideClient{c: c, addr: e.ep.Addr}, nil
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
