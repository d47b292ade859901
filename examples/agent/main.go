// Command agent is a long-running measurement endpoint and Prometheus
// exporter for fleets, built only on netperfkit's public API. One process
// per host:
//
//   - serves the iperf3-compatible server (-iperf3-port, default 5201) and
//     the sockperf-compatible server (-sockperf-port, default 11111, UDP and
//     TCP), so the host can be measured by stock tools and by other agents;
//   - probes its peers (-peers, -peers-file, reloaded on SIGHUP): UDP
//     ping-pong RTT every -rtt-every (10 s), a short TCP throughput probe
//     every -tput-every (off by default) within -tput-budget bytes per hour,
//     and optional cache connection probes (-cache);
//   - exports on /metrics (-metrics, default 127.0.0.1:9469) the probe
//     results, the ethtool statistics of -iface (default: the default-route
//     interface) with node_exporter's names, and the SRD coverage of an ENA
//     interface with ENA Express.
//
// Settings come from flags or a JSON file (-config FILE; flags given win).
// SIGTERM or SIGINT stops it within 2 s. See README.md for the metrics and
// the deploy/ manifests.
//
//	agent -metrics :9469 -peers 10.0.1.7,10.0.2.9 -rtt-every 10s
//	agent -config /etc/netperfkit/agent.json
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if err := run(ctx, os.Args[1:], os.Stderr, hup); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// shutdownGrace is how long the agent waits for its servers, probes and the
// HTTP server after ctx ends: the whole stop stays under 2 s.
const shutdownGrace = 1500 * time.Millisecond

// run is the agent: it returns after ctx ends and everything stopped, or
// with the error that kept it from starting. A value on hup reloads the
// peers.
func run(ctx context.Context, args []string, stderr io.Writer, hup <-chan os.Signal) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	peers, err := cfg.allPeers()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newMetricsFor(cfg.NativeOnly)
	var bg sync.WaitGroup // servers and samplers
	var ms *mesh
	// A failed start stops what already runs before returning.
	fail := func(err error) error {
		cancel()
		if ms != nil {
			ms.wait()
		}
		bg.Wait()
		return err
	}

	if err := startServers(ctx, &bg, cfg, log); err != nil {
		return fail(err)
	}
	probes, err := agentProbes(cfg)
	if err != nil {
		return fail(err)
	}
	closeEthtool := startEthtool(ctx, &bg, cfg, m, log)
	defer closeEthtool()

	topo, _ := parseTopology(cfg.Mesh) // validated
	srcZone, zones := agentZones(ctx, cfg, log)
	starve := newStarvation(time.Duration(cfg.StarvedWait))
	m.reg.MustRegister(newStarveCollector(starve))
	ms = newMesh(ctx, meshConfig{
		rttEvery: time.Duration(cfg.RTTEvery), tputEvery: time.Duration(cfg.TputEvery),
		tputBytes:   cfg.TputBytes,
		rttTimeout:  time.Duration(cfg.ProbeTimeout),
		tputTimeout: time.Duration(cfg.TputDuration + cfg.ProbeTimeout),
		maxProbes:   cfg.MaxProbes, jitter: 0.1, firstJitter: true,
		budget: newByteBudget(cfg.TputBudget), metrics: m, log: log,
		probes: probes, topo: topo, expire: cfg.meshExpire(), starve: starve,
		peerSeries: cfg.meshPeerSeries(), srcZone: srcZone, zones: zones,
	})
	src := &peerSources{ms: ms}
	src.setStatic(peers)
	if cfg.PeersDNS != "" {
		d, _ := newDNSPeers(cfg.PeersDNS, cfg.IperfPort, cfg.SockperfPort, net.DefaultResolver) // validated
		timeout := min(cfg.dnsEvery(), time.Duration(cfg.ProbeTimeout))
		bg.Go(func() { resolveLoop(ctx, d, src, cfg.dnsEvery(), timeout, m, log) })
	}
	if err := startCacheProbes(ctx, ms, cfg, m, log); err != nil {
		return fail(err)
	}

	metricsAddr, err := cfg.metricsAddr()
	if err != nil {
		return fail(err)
	}
	srv, err := startHTTP(ctx, &bg, metricsAddr, cfg.WebConfigFile, m, log)
	if err != nil {
		return fail(err)
	}
	log.Info("agent ready", "metrics", srv.Addr, "peers", len(peers), "rtt_every", time.Duration(cfg.RTTEvery).String(),
		"tput_every", time.Duration(cfg.TputEvery).String())

	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-hup:
			reloadPeers(cfg, src, log)
		}
	}
	return shutdown(srv, ms, &bg, log)
}

// agentZones is the agent's own zone and the peers' subnets' (-zone,
// -zones, IMDS), logged once.
func agentZones(ctx context.Context, cfg config, log *slog.Logger) (string, zoneMap) {
	zones, _ := parseZones(cfg.Zones) // validated
	src, from := sourceZone(ctx, cfg.Zone, zones, time.Second)
	log.Info("zones", "src_zone", src, "from", from, "subnets", len(zones))
	return src, zones
}

// shutdown stops the HTTP server and waits for the servers and probes, which
// stop on their own when ctx ends, for at most shutdownGrace.
func shutdown(srv *http.Server, ms *mesh, bg *sync.WaitGroup, log *slog.Logger) error {
	deadline := time.Now().Add(shutdownGrace)
	sctx, scancel := context.WithDeadline(context.Background(), deadline)
	defer scancel()
	_ = srv.Shutdown(sctx)
	done := make(chan struct{})
	go func() {
		ms.wait()
		bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		log.Info("agent stopped")
	case <-sctx.Done():
		log.Warn("agent stopped before every probe and server ended")
	}
	return nil
}

func reloadPeers(cfg config, src *peerSources, log *slog.Logger) {
	peers, err := cfg.allPeers()
	if err != nil {
		log.Error("SIGHUP: peers not reloaded", "err", err)
		return
	}
	src.setStatic(peers)
	log.Info("SIGHUP: peers reloaded", "peers", len(peers))
}

// newLogger returns the agent's logger, having logged the settings that
// do nothing (cfg.warnings).
func newLogger(cfg config, w io.Writer) *slog.Logger {
	lvl, _ := parseLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	log := slog.New(slog.NewTextHandler(w, opts))
	if cfg.LogFormat == "json" {
		log = slog.New(slog.NewJSONHandler(w, opts))
	}
	for _, msg := range cfg.warnings() {
		log.Warn(msg)
	}
	return log
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("-log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// agentProbes binds the probes to the adapters of parts.go.
func agentProbes(cfg config) (probeFuncs, error) {
	auth, err := probeAuth(cfg)
	if err != nil {
		return probeFuncs{}, err
	}
	perReply := rttReplyTimeout(cfg)
	return probeFuncs{
		rtt: func(ctx context.Context, p peer) (rttResult, error) {
			return rttProbe(ctx, p.sockperfAddr(), cfg.RTTCount, perReply)
		},
		tput: func(ctx context.Context, p peer, maxBytes int64) (tputResult, error) {
			return tputProbe(ctx, p.iperfAddr(), maxBytes, time.Duration(cfg.TputDuration), time.Duration(cfg.ProbeTimeout), auth)
		},
	}, nil
}

// rttReplyTimeout is the cap of an RTT probe's reply timeout,
// min(1 s, -probe-timeout): a reply later than that is lost. Each reply is
// awaited only for latency's adaptive timeout (PingPongConfig's
// AdaptiveTimeout with its default floor), so on a lossy path of
// microseconds a loss costs a few milliseconds, not a second, and
// -rtt-count 1000 fits in -probe-timeout, while a reply after its adaptive
// timeout but within the cap is still recorded. Splitting -probe-timeout
// over the messages instead would leave 5 ms per reply at -rtt-count 1000
// whatever the path.
func rttReplyTimeout(cfg config) time.Duration {
	return min(time.Second, time.Duration(cfg.ProbeTimeout))
}

// startServers binds the iperf3- and sockperf-compatible servers and serves
// them until ctx ends. A port of 0 turns a server off.
func startServers(ctx context.Context, bg *sync.WaitGroup, cfg config, log *slog.Logger) error {
	lim := cfg.serverLimits()
	ac, err := newAccessControl(cfg)
	if err != nil {
		return err
	}
	if cfg.IperfPort > 0 {
		addr := net.JoinHostPort(cfg.listenHost(), strconv.Itoa(cfg.IperfPort))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("iperf3 server: %w", err)
		}
		log.Info("iperf3-compatible server listening", "addr", ln.Addr().String())
		bg.Go(func() {
			if err := serveIperf3(ctx, ln, lim, ac); err != nil && ctx.Err() == nil {
				log.Error("iperf3 server stopped", "err", err)
			}
		})
	}
	if cfg.SockperfPort > 0 {
		addr := net.JoinHostPort(cfg.listenHost(), strconv.Itoa(cfg.SockperfPort))
		for _, network := range []string{"udp", "tcp"} {
			a, serve, err := listenSockperf(ctx, network, addr, lim, ac)
			if err != nil {
				return fmt.Errorf("sockperf server (%s): %w", network, err)
			}
			log.Info("sockperf-compatible server listening", "network", network, "addr", a.String())
			bg.Go(func() {
				if err := serve(); err != nil && ctx.Err() == nil {
					log.Error("sockperf server stopped", "network", network, "err", err)
				}
			})
		}
	}
	return nil
}

// startHTTP serves /metrics from the registry until ctx ends (run shuts it
// down), through exporter-toolkit's web.Serve as exporters do: webConfig
// (-web.config.file, "" for plain HTTP) turns on TLS, client certificates
// and basic auth, and is read again for each new connection (certificates)
// and request (users).
func startHTTP(ctx context.Context, bg *sync.WaitGroup, addr, webConfig string, m *metrics, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "netperfkit agent: metrics at /metrics")
	})
	srv := &http.Server{
		Addr: ln.Addr().String(), Handler: mux,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 15 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		// Refused TLS handshakes (no client certificate, plain HTTP to
		// the TLS port) go to the agent's log, not to stderr's.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &[]string{srv.Addr}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}
	bg.Go(func() {
		if err := web.Serve(ln, srv, flags, log.With("server", "metrics")); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	})
	return srv, nil
}
