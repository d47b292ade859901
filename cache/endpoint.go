package cache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"
)

// Default timeouts of an Endpoint; the field study used 5 s request timeouts.
const (
	defaultConnectTimeout = 5 * time.Second
	defaultRequestTimeout = 5 * time.Second
)

// Endpoint describes how to reach and authenticate to a Valkey or Redis
// endpoint. The zero value of every field means the documented default; only
// Addr is required. An Endpoint is a plain value: it is not used concurrently
// by this package after a Prober or run has copied it.
type Endpoint struct {
	// Addr is the host:port of the endpoint (for a cluster, any node or the
	// configuration endpoint).
	Addr string
	// Cluster enables cluster mode: the prober runs CLUSTER SLOTS, the
	// engines route keys by slot.
	Cluster bool

	// TLS enables TLS. The server certificate is verified against CACertPEM,
	// or the system roots when CACertPEM is empty, unless InsecureSkipVerify.
	TLS bool
	// CACertPEM holds PEM certificates of the CAs to trust instead of the
	// system roots.
	CACertPEM []byte
	// InsecureSkipVerify disables certificate verification. Only when asked.
	InsecureSkipVerify bool
	// ServerName is the SNI name and the name verified in the certificate.
	// Empty means the host of the address being dialled.
	ServerName string
	// TLSVersion pins the TLS version (tls.VersionTLS12 or
	// tls.VersionTLS13). Zero means TLS 1.2 or TLS 1.3, as negotiated.
	TLSVersion uint16

	// User is the ACL user name. Empty with a Password means AUTH with the
	// password only (the default user). With Credentials set it is only
	// shown by String (Credentials names the user).
	User string
	// Password is the ACL password; ignored when Credentials is set.
	Password Secret
	// Credentials, when set, supplies the user name and password of every
	// new connection's AUTH in place of User and Password: for credentials
	// that change, such as ElastiCache IAM tokens (package cache/iam's
	// TokenSource.Credentials). It is called in the AUTH phase, whose time
	// includes it, with a context bounded by ConnectTimeout, and from
	// several connections at once, so it must be safe for concurrent use.
	// An empty user means AUTH with the password only. Its errors fail the
	// connection as ErrAuth.
	Credentials func(ctx context.Context) (user string, password Secret, err error) `json:"-"`

	// ConnectTimeout bounds setting up one connection: DNS, TCP connect, TLS
	// handshake and AUTH together. Zero means 5 s.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each command after connection set-up, including
	// CLUSTER SLOTS. Zero means 5 s.
	RequestTimeout time.Duration
	// Resolver resolves host names. Nil means net.DefaultResolver. It is
	// left out of JSON (its Dial hook cannot be marshalled).
	Resolver *net.Resolver `json:"-"`
}

// String describes the endpoint without secrets.
func (e Endpoint) String() string {
	auth := "none"
	switch {
	case e.Credentials != nil:
		auth = "credentials:" + e.User
	case e.Password != "":
		auth = "password:" + e.User
	}
	return fmt.Sprintf("%s cluster=%t tls=%t auth=%s", e.Addr, e.Cluster, e.TLS, auth)
}

// dialer sets up connections to the nodes of one endpoint, timing each phase
// through the WithClientTrace hooks in the context. It is safe for concurrent use.
type dialer struct {
	ep       Endpoint
	roots    *x509.CertPool
	resolver *net.Resolver
	readers  readerPool
}

func newDialer(ep *Endpoint) (*dialer, error) {
	if err := ep.validate(); err != nil {
		return nil, err
	}
	d := &dialer{ep: *ep, resolver: ep.Resolver}
	if d.ep.ConnectTimeout <= 0 {
		d.ep.ConnectTimeout = defaultConnectTimeout
	}
	if d.ep.RequestTimeout <= 0 {
		d.ep.RequestTimeout = defaultRequestTimeout
	}
	if d.resolver == nil {
		d.resolver = net.DefaultResolver
	}
	if len(ep.CACertPEM) > 0 {
		d.roots = x509.NewCertPool()
		if !d.roots.AppendCertsFromPEM(ep.CACertPEM) {
			return nil, invalid("no certificate found in Endpoint.CACertPEM")
		}
	}
	return d, nil
}

// validate checks what newDialer needs of ep.
func (ep *Endpoint) validate() error {
	switch {
	case ep == nil:
		return invalid("nil Endpoint")
	case ep.Addr == "":
		return invalid("Endpoint.Addr is required")
	case ep.ConnectTimeout < 0:
		return invalid("Endpoint.ConnectTimeout %v is negative", ep.ConnectTimeout)
	case ep.RequestTimeout < 0:
		return invalid("Endpoint.RequestTimeout %v is negative", ep.RequestTimeout)
	case ep.TLSVersion != 0 && ep.TLSVersion != tls.VersionTLS12 && ep.TLSVersion != tls.VersionTLS13:
		return invalid("Endpoint.TLSVersion %#x is neither TLS 1.2 (0x303) nor TLS 1.3 (0x304)", ep.TLSVersion)
	}
	if _, _, err := net.SplitHostPort(ep.Addr); err != nil {
		return invalid("Endpoint.Addr: %w", err)
	}
	return nil
}

func (d *dialer) tlsConfig(host string) *tls.Config {
	name := d.ep.ServerName
	if name == "" {
		name = host
	}
	minV, maxV := d.ep.TLSVersion, d.ep.TLSVersion
	if minV == 0 {
		minV = tls.VersionTLS12
	}
	return &tls.Config{
		ServerName:         name,
		RootCAs:            d.roots,
		InsecureSkipVerify: d.ep.InsecureSkipVerify, //nolint:gosec // only when the caller asks
		MinVersion:         minV,
		MaxVersion:         maxV,
	}
}

// dial opens a connection to addr and runs the DNS, connect, TLS and AUTH
// phases, each reported to the trace in ctx. Errors are *Error. The
// connection is closed as soon as ctx ends, in any phase and afterwards,
// which interrupts whatever is blocked on it.
func (d *dialer) dial(ctx context.Context, addr string) (*conn, error) {
	// One deadline bounds all set-up phases. It is applied to the socket
	// rather than through a derived context, which would cost allocations and
	// a timer per connection in connect-per-operation runs.
	deadline := time.Now().Add(d.ep.ConnectTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
		deadline = cd
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Error{Phase: PhaseDNS, Kind: ErrDNS, Addr: addr, Err: err}
	}
	ips, err := d.resolve(ctx, addr, host, deadline)
	if err != nil {
		return nil, err
	}
	nc, err := d.connect(ctx, ips, port, deadline)
	if err != nil {
		return nil, classify(PhaseConnect, addr, ctxCause(ctx, err))
	}
	// The cancel closes the TCP connection, which also ends a TLS session
	// on it; it must not read nc, which the TLS phase replaces.
	raw := nc
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	if d.ep.TLS {
		tc, err := d.handshake(ctx, nc, addr, host, deadline)
		if err != nil {
			stop()
			nc.Close()
			return nil, classify(PhaseTLS, addr, ctxCause(ctx, err))
		}
		nc = tc
	}
	c := newConn(nc, addr, d.ep.RequestTimeout, &d.readers, stop)
	if d.ep.Credentials != nil || d.ep.Password != "" {
		if err := d.auth(ctx, c, deadline); err != nil {
			_ = c.release()
			return nil, err
		}
	}
	return c, nil
}

// resolve looks host up (skipped for IP literals), reporting the DNS phase.
func (d *dialer) resolve(ctx context.Context, addr, host string, deadline time.Time) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	trace := contextClientTrace(ctx)
	start := time.Now()
	trace.start(PhaseInfo{Phase: PhaseDNS, Addr: addr, Start: start})
	dctx, cancel := context.WithDeadline(ctx, deadline)
	resolver, n := d.resolver, contextNotes(ctx)
	if n != nil {
		n.dnsTimeouts.Store(0)
		resolver = d.lookupResolver(n)
	}
	addrs, err := resolver.LookupIPAddr(dctx, host)
	cancel()
	if n != nil && n.dnsTimeouts.Load() > 0 {
		n.addEvents(causeDNS, time.Since(start), int64(n.dnsTimeouts.Load()))
	}
	if err == nil && len(addrs) == 0 {
		err = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	err = ctxCause(ctx, err)
	trace.done(PhaseInfo{Phase: PhaseDNS, Addr: addr, Start: start, Duration: time.Since(start), Err: err})
	if err != nil {
		return nil, classify(PhaseDNS, addr, err)
	}
	ips := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		ips = append(ips, a.IP)
	}
	return ips, nil
}

// connect connects to the resolved addresses in order until one accepts (a
// name such as localhost may resolve to ::1 first while the server only
// listens on 127.0.0.1); each attempt is reported on its own.
func (d *dialer) connect(ctx context.Context, ips []net.IP, port string, deadline time.Time) (net.Conn, error) {
	trace := contextClientTrace(ctx)
	var (
		nc  net.Conn
		err error
	)
	for _, ip := range ips {
		ipAddr := net.JoinHostPort(ip.String(), port)
		start := time.Now()
		trace.start(PhaseInfo{Phase: PhaseConnect, Addr: ipAddr, Start: start})
		// No TCP keep-alive: every request has a deadline, and the four
		// setsockopt calls it costs show in connect-per-operation runs.
		nd := net.Dialer{Deadline: deadline, KeepAlive: -1}
		nc, err = nd.DialContext(ctx, "tcp", ipAddr)
		took := time.Since(start)
		trace.done(PhaseInfo{Phase: PhaseConnect, Addr: ipAddr, Start: start, Duration: took, Err: ctxCause(ctx, err)})
		if err == nil {
			contextNotes(ctx).connected(nc, took)
		}
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	return nc, err
}

// handshake runs the TLS handshake on nc, reporting the TLS phase.
func (d *dialer) handshake(ctx context.Context, nc net.Conn, addr, host string, deadline time.Time) (net.Conn, error) {
	trace := contextClientTrace(ctx)
	start := time.Now()
	trace.start(PhaseInfo{Phase: PhaseTLS, Addr: addr, Start: start})
	tc := tls.Client(nc, d.tlsConfig(host))
	err := nc.SetDeadline(deadline)
	if err == nil {
		err = tc.HandshakeContext(ctx)
	}
	took := time.Since(start)
	if err == nil {
		// Two round trips at most: TLS 1.2's; 1.3 takes one.
		contextNotes(ctx).overran(causeTLS, took, 2)
	}
	if trace != nil && trace.Done != nil {
		info := PhaseInfo{Phase: PhaseTLS, Addr: addr, Start: start, Duration: took, Err: ctxCause(ctx, err)}
		if err == nil {
			state := tc.ConnectionState()
			info.tlsState = &state
		}
		trace.Done(info)
	}
	return tc, err
}

// auth sends AUTH within the connect deadline. With Endpoint.Credentials,
// getting them (presigning an IAM token when one is due) is part of the
// phase.
func (d *dialer) auth(ctx context.Context, c *conn, deadline time.Time) error {
	trace := contextClientTrace(ctx)
	start := time.Now()
	trace.start(PhaseInfo{Phase: PhaseAuth, Addr: c.addr, Start: start})
	err := func() error {
		user, pw := d.ep.User, d.ep.Password
		if d.ep.Credentials != nil {
			tctx, cancel := context.WithDeadline(ctx, deadline)
			var err error
			user, pw, err = d.ep.Credentials(tctx)
			cancel()
			if err != nil {
				return ctxCause(ctx, fmt.Errorf("%w: %w", errCredentials, err))
			}
		}
		args := []string{"AUTH", pw.Reveal()}
		if user != "" {
			args = []string{"AUTH", user, pw.Reveal()}
		}
		v, err := c.roundTrip(deadline, args, nil)
		if err != nil {
			return ctxCause(ctx, err)
		}
		if v.IsError() {
			return &replyError{Msg: v.Text()}
		}
		return nil
	}()
	took := time.Since(start)
	if err == nil {
		contextNotes(ctx).overran(causeAuth, took, 1)
	}
	trace.done(PhaseInfo{Phase: PhaseAuth, Addr: c.addr, Start: start, Duration: took, Err: err})
	return classify(PhaseAuth, c.addr, err)
}
