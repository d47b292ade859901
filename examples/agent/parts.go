package main

// This file is the only place the agent calls netperfkit's measurement
// packages. Each adapter is small so that a change of a package's API
// touches one function here.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtoolprom"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// accessControl is who the agent's servers serve: the allowed client
// networks (both servers), the per-client cap on iperf3 tests and the
// iperf3 RSA authentication (iperf3auth.Server).
type accessControl struct {
	allowed   []netip.Prefix
	perClient int
	auth      *iperf3auth.Server
}

// newAccessControl reads the access settings; key and users files are
// checked now, so a bad one stops the agent at start.
func newAccessControl(cfg config) (accessControl, error) {
	ac := accessControl{perClient: cfg.MaxTestsPerClient}
	for _, s := range cfg.AllowClients {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return ac, fmt.Errorf("-allow-clients %q: want CIDR: %w", s, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		// Both servers compare IPv4 clients as IPv4 addresses: an
		// IPv4-mapped entry means its IPv4 network.
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		ac.allowed = append(ac.allowed, p.Masked())
	}
	if cfg.IperfKey != "" {
		pem, err := os.ReadFile(cfg.IperfKey)
		if err != nil {
			return ac, fmt.Errorf("-iperf3-rsa-private-key: %w", err)
		}
		key, err := iperf3auth.ParsePrivateKey(pem)
		if err != nil {
			return ac, fmt.Errorf("-iperf3-rsa-private-key: %w", err)
		}
		ac.auth = &iperf3auth.Server{PrivateKey: key, UsersPath: cfg.IperfUsers}
	}
	return ac, nil
}

// probeAuth is the credentials of the agent's throughput probes, nil
// without -iperf3-username.
func probeAuth(cfg config) (*iperf3auth.Client, error) {
	if cfg.IperfUser == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(cfg.IperfPublicKey)
	if err != nil {
		return nil, fmt.Errorf("-iperf3-rsa-public-key: %w", err)
	}
	pub, err := iperf3auth.ParsePublicKey(pem)
	if err != nil {
		return nil, fmt.Errorf("-iperf3-rsa-public-key: %w", err)
	}
	return &iperf3auth.Client{User: cfg.IperfUser, Password: os.Getenv("NETPERFKIT_IPERF3_PASSWORD"), PublicKey: pub}, nil
}

// rttResult is what one RTT probe measured.
type rttResult struct {
	samples []time.Duration // one round trip per answered message, late replies included
	lost    int64           // messages given up on (see rttProbe)
	// wakeP99 is the agent's own share of the round trips: the 99th
	// percentile of the time from a reply's arrival in the kernel to its
	// read; zero when the platform does not tell arrivals.
	wakeP99 time.Duration
	// kernel holds the kernel-to-kernel round trips of the answered
	// messages that have both stamps (linux); empty elsewhere.
	kernel []time.Duration
	// starved is why the agent was starved of CPU during the probe
	// ("throttled", "wait"), "" when it was not (see starvation.judge).
	starved string
	// socketDrops is the probe socket's drop counter at its end (replies
	// the kernel dropped for a full receive buffer); nil when unknown.
	socketDrops *int64
}

// messages is how many messages were answered or lost: a message the probe
// was cut short before giving up on is neither.
func (r rttResult) messages() int64 { return int64(len(r.samples)) + r.lost }

// rttProbe sends count UDP ping-pong messages to a sockperf-compatible
// server, one after the other, and returns what it measured. Each reply is
// awaited for latency's adaptive timeout, at most maxWait (see
// rttReplyTimeout). A message is lost when no reply came within maxWait or,
// for the last messages, by the end of the final wait for late replies.
// When ctx ends first, the result so far comes with ctx.Err(), and a
// message whose maxWait had not passed is neither answered nor lost.
func rttProbe(ctx context.Context, addr string, count int, maxWait time.Duration) (rttResult, error) {
	res, err := latency.PingPong(ctx, addr, &latency.PingPongConfig{
		Count:           int64(count),
		ReadTimeout:     maxWait,
		AdaptiveTimeout: true,
		KernelStamps:    true,
		// A few messages a probe: a small histogram is enough and keeps
		// each probe's allocation small.
		Recorder: &latency.RecorderConfig{Highest: 10 * time.Second, SignificantFigures: 2},
	})
	if res == nil {
		return rttResult{}, err
	}
	r := rttResult{samples: res.Samples, lost: res.Dropped, socketDrops: res.SocketDrops}
	if res.ReceiveWake != nil && res.ReceiveWake.Observations > 0 {
		r.wakeP99 = res.ReceiveWake.P99
	}
	for _, k := range res.KernelSamples {
		if k >= 0 {
			r.kernel = append(r.kernel, k)
		}
	}
	return r, err
}

// tputResult is what one throughput probe measured.
type tputResult struct {
	bitsPerSecond float64
	sentBytes     int64
}

// tputProbe runs one TCP stream to an iperf3-compatible server, sending at
// most maxBytes for at most d.
func tputProbe(ctx context.Context, addr string, maxBytes int64, d, ioTimeout time.Duration, auth *iperf3auth.Client) (tputResult, error) {
	res, err := throughput.Run(ctx, addr, &throughput.Config{
		Duration: d,
		Bytes:    maxBytes,
		// Small blocks keep the overshoot past maxBytes small.
		BlockLen:       min(128<<10, int(maxBytes)),
		Interval:       -1,
		ConnectTimeout: ioTimeout,
		IOTimeout:      ioTimeout,
		Title:          "netperfkit-agent", Auth: auth,
	})
	if errors.Is(err, throughput.ErrAccessDenied) && !errors.Is(err, throughput.ErrAuthFailed) {
		err = fmt.Errorf("%w: %w", errPeerBusy, err)
	}
	var r tputResult
	if res != nil && res.Upload != nil {
		r.sentBytes = res.Upload.Sent.Bytes
		r.bitsPerSecond = res.Upload.Received.BitsPerSecond
		if r.bitsPerSecond == 0 {
			r.bitsPerSecond = res.Upload.Sent.BitsPerSecond
		}
	}
	return r, err
}

// serverLimits are the limits of the two servers the agent runs.
type serverLimits struct {
	maxTests int     // iperf3 tests at once
	maxRate  float64 // iperf3 tests' total bits/s, 0: no limit
	maxConns int     // sockperf TCP connections at once
}

// serverLimits are the limits cfg sets for the two servers.
func (c *config) serverLimits() serverLimits {
	return serverLimits{maxTests: c.MaxTests, maxConns: c.MaxConns, maxRate: c.BitrateLimit}
}

// serveIperf3 runs the iperf3-compatible server on ln until ctx ends, and
// then returns nil: the end the agent asked for is not a failure.
func serveIperf3(ctx context.Context, ln net.Listener, lim serverLimits, ac accessControl) error {
	srv, err := throughput.NewServer(&throughput.ServerConfig{
		MaxTests:          lim.maxTests,
		MaxDuration:       60 * time.Second,
		MaxStreams:        8,
		AllowedClients:    ac.allowed,
		MaxTestsPerClient: ac.perClient,
		Auth:              ac.auth,
		MaxTotalBitrate:   lim.maxRate,
	})
	if err != nil {
		return err
	}
	if err := srv.Serve(ctx, ln); ctx.Err() == nil {
		return err
	}
	return nil
}

// listenSockperf binds the sockperf-compatible server on addr for network
// ("udp" or "tcp") and returns the serve function that runs it until ctx
// ends. Clients outside the allow-list get nothing: their connections are
// closed and their datagrams dropped.
func listenSockperf(ctx context.Context, network, addr string, lim serverLimits, ac accessControl) (net.Addr, func() error, error) {
	s, err := latency.NewServer(&latency.ServerConfig{MaxConns: lim.maxConns, AllowedClients: ac.allowed})
	if err != nil {
		return nil, nil, err
	}
	var lc net.ListenConfig
	if network == "udp" {
		pc, err := lc.ListenPacket(ctx, network, addr)
		if err != nil {
			return nil, nil, err
		}
		return pc.LocalAddr(), func() error { return s.ServePacket(ctx, pc) }, nil
	}
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	return ln.Addr(), func() error { return s.Serve(ctx, ln) }, nil
}

// cacheProber probes one cache endpoint.
type cacheProber = cache.Prober

func newCacheProber(ctx context.Context, ep *cache.Endpoint) (*cacheProber, error) {
	return cache.NewProber(ep)
}

// cacheProbePhases runs one connection probe against a Valkey or Redis
// endpoint and returns the duration of each phase that happened, by phase
// name ("total" for the whole probe), what its set-up waited on
// (cache.Causes' names, nil when nothing), and the error kind when it
// failed.
func cacheProbePhases(ctx context.Context, p *cacheProber) (map[string]time.Duration, []string, string, error) {
	r, err := p.Probe(ctx)
	phases := map[string]time.Duration{}
	var causes []string
	if r != nil && r.Causes != nil {
		for name := range r.Causes.Connects {
			causes = append(causes, name)
		}
	}
	if r != nil {
		for name, d := range r.Phases {
			if d > 0 {
				phases[string(name)] = d
			}
		}
		if r.Total > 0 && err == nil {
			phases["total"] = r.Total
		}
	}
	if err != nil {
		kind := string(cache.ErrServer)
		var ce *cache.Error
		if errors.As(err, &ce) {
			kind = string(ce.Kind)
		}
		return phases, causes, kind, err
	}
	return phases, causes, "", nil
}

// cacheEndpoint builds the endpoint of a cache probe. The password comes
// from the environment and stays a cache.Secret, which never prints.
func cacheEndpoint(addr string, tlsOn bool, caPEM []byte, user string, timeout time.Duration) *cache.Endpoint {
	return &cache.Endpoint{
		Addr: addr, TLS: tlsOn, CACertPEM: caPEM, User: user,
		Password:       cache.Secret(os.Getenv("NETPERFKIT_CACHE_PASSWORD")),
		ConnectTimeout: timeout, RequestTimeout: timeout,
	}
}

// srdCoverage is SRD tx packets over eligible tx packets between two
// snapshots. ok is false when the NIC has no SRD counters or nothing was
// eligible in the window (the ratio is then undefined).
func srdCoverage(before, after *ethtool.Snapshot) (ratio float64, ok bool) {
	if !hasSRDCounters(after) {
		return 0, false
	}
	r := srd.Coverage(before, after)
	if r.EligibleTxPktsDelta == 0 {
		return 0, false
	}
	return r.Coverage, true
}

// hasSRDCounters reports whether the interface's driver exposes the SRD
// counters that coverage needs.
func hasSRDCounters(s *ethtool.Snapshot) bool {
	_, tx := s.Stats.Get("ena_srd_tx_pkts")
	_, eligible := s.Stats.Get("ena_srd_eligible_tx_pkts")
	return tx && eligible
}

// ethtoolReader opens the ethtool client the collector and the SRD sampler
// share.
func ethtoolReader() (*ethtool.Client, error) { return ethtool.New() }

// ethtoolCollector exposes the interface's statistics with node_exporter's
// names.
func ethtoolCollector(c *ethtool.Client, iface string) *ethtoolprom.Collector {
	return ethtoolprom.NewCollector(c, iface)
}

// errPeerBusy marks a throughput probe the peer's server turned away
// because it was running as many tests as it allows (another agent was
// probing it).
var errPeerBusy = errors.New("peer busy")

// probeErrorKind names a failed probe for netperfkit_probe_errors_total:
// busy, timeout, refused, unreachable, canceled, dns or other.
func probeErrorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errPeerBusy):
		return "busy"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "dns"
	}
	return "other"
}
