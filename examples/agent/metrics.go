package main

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics holds the agent's own metrics in their registry. Every field is
// safe for concurrent use.
type metrics struct {
	reg         *prometheus.Registry
	rtt         *prometheus.HistogramVec
	rttMessages *prometheus.CounterVec
	rttLoss     *prometheus.GaugeVec
	rttWake     *prometheus.GaugeVec
	errs        *prometheus.CounterVec
	tput        *prometheus.GaugeVec
	tputBytes   *prometheus.CounterVec
	cachePhase  *prometheus.HistogramVec
	srdRatio    *prometheus.GaugeVec
	skipped     *prometheus.CounterVec
	// issue 31: the kernel-to-kernel view of the RTT probes
	rttKernel *prometheus.HistogramVec
	// issue 32: replies the kernel dropped on the probe's own socket
	rttSocketDrops *prometheus.CounterVec
	// issue 33: the fleet
	rttStarved prometheus.Histogram
	starved    *prometheus.CounterVec
	dnsLookups *prometheus.CounterVec
	dnsPeers   prometheus.Gauge
	meshPeers  *prometheus.GaugeVec
	// issue 41: the fleet's questions, by zone pair
	rttZone         *prometheus.HistogramVec
	rttZoneMessages *prometheus.CounterVec
}

// Native histograms (the Prometheus 2.40+ feature) beside the classic
// buckets: a bucket factor of 1.1 gives schema 3, buckets 2^(1/8) = 1.09
// apart, so a quantile of the sum of many agents' histograms is within 9%
// of the exact one. 160 buckets hold a spread of 2^20 (1 µs to 1 s) at that
// resolution; a wider spread lowers the resolution, and an hour after the
// last reset the histogram may reset instead.
const (
	nativeFactor     = 1.1
	nativeMaxBuckets = 160
)

// nativeOpts adds the native histogram to o; nativeOnly
// (-native-histograms-only) drops o's classic buckets.
func nativeOpts(o prometheus.HistogramOpts, nativeOnly bool) prometheus.HistogramOpts {
	if nativeOnly {
		o.Buckets = nil
	}
	o.NativeHistogramBucketFactor = nativeFactor
	o.NativeHistogramMaxBucketNumber = nativeMaxBuckets
	o.NativeHistogramMinResetDuration = time.Hour
	return o
}

// rttBuckets span 25 µs (same rack) to 2.5 s (a stalled path) in steps
// of about 1.8x, so same-AZ and cross-AZ round trips fall in different
// buckets and a p99.9 can be read with histogram_quantile.
var rttBuckets = prometheus.ExponentialBucketsRange(25e-6, 2.5, 20)

// cacheBuckets span 50 µs to 5 s: a connect on loopback to a slow TLS
// handshake with IAM presigning.
var cacheBuckets = prometheus.ExponentialBucketsRange(50e-6, 5, 20)

// newMetrics is newMetricsFor with classic buckets beside the native ones.
func newMetrics() *metrics { return newMetricsFor(false) }

// newMetricsFor makes the agent's metrics; nativeOnly leaves the classic
// buckets out of every histogram (-native-histograms-only).
func newMetricsFor(nativeOnly bool) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		rtt: prometheus.NewHistogramVec(nativeOpts(prometheus.HistogramOpts{
			Name:    "netperfkit_probe_rtt_seconds",
			Help:    "UDP ping-pong round-trip time to the peer's sockperf-compatible server, one observation per answered message, late replies (after their adaptive timeout, within its cap) included; probes run while the agent was starved of CPU are in netperfkit_probe_rtt_starved_seconds instead.",
			Buckets: rttBuckets,
		}, nativeOnly), []string{"peer"}),
		rttMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netperfkit_probe_rtt_messages_total",
			Help: "RTT probe messages answered or lost, by peer: netperfkit_probe_rtt_seconds_count plus netperfkit_probe_errors_total{kind=\"lost\"} (plus the round trips of the peer's probes flagged as starved, in netperfkit_probe_rtt_starved_seconds), so the loss ratio over a window is the rate of the one over the rate of this. A message is lost when no reply came within the cap of its reply timeout or, for a probe's last messages, by the end of the probe's final wait for late replies (one more adaptive timeout); a message whose cap had not passed when -probe-timeout ended its probe is in neither.",
		}, []string{"peer"}),
		rttLoss: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netperfkit_probe_rtt_loss_ratio",
			Help: "Lost over answered-or-lost messages of the peer's last RTT probe (0 to 1): see netperfkit_probe_rtt_messages_total for what counts, and the agent's README (RTT probes on lossy paths) for the adaptive reply timeout and its cap.",
		}, []string{"peer"}),
		rttWake: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netperfkit_probe_rtt_receive_wake_p99_seconds",
			Help: "The agent's own share of the peer's last RTT probe: the 99th percentile of the time from each reply's arrival in this host's kernel (SO_TIMESTAMPNS) to the agent reading it, part of every netperfkit_probe_rtt_seconds observation. When it is a large part of the round trips, a busy agent host, not the path, is what they show.",
		}, []string{"peer"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netperfkit_probe_errors_total",
			Help: "Failed probes by peer (host, or cache endpoint) and kind: timeout, refused, unreachable, dns, busy (the peer's iperf3 server was running its limit of tests), other; lost counts RTT messages lost (see netperfkit_probe_rtt_messages_total); an RTT probe that -probe-timeout ended before its last message counts as a timeout, and what it measured is still exported; for cache endpoints, the cache package's error kinds (dns, connect_refused, connect_timeout, connect, tls_verify, tls_handshake, auth_wrongpass, auth_noauth, auth, cluster, command, timeout, connection, closing, recovery, server_error).",
		}, []string{"peer", "kind"}),
		tput: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netperfkit_probe_throughput_bits_per_second",
			Help: "Rate of the last short TCP throughput probe to the peer's iperf3-compatible server.",
		}, []string{"peer"}),
		tputBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netperfkit_probe_throughput_sent_bytes_total",
			Help: "Bytes sent by throughput probes, counted against -tput-budget.",
		}, []string{"peer"}),
		cachePhase: prometheus.NewHistogramVec(nativeOpts(prometheus.HistogramOpts{
			Name:    "netperfkit_cache_phase_seconds",
			Help:    "Duration of each phase of a fresh connection to a cache endpoint: dns, connect, tls, auth, cluster_slots, command, close, total.",
			Buckets: cacheBuckets,
		}, nativeOnly), []string{"endpoint", "phase"}),
		srdRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netperfkit_srd_coverage_ratio",
			Help: "ENA Express: SRD transmitted packets over SRD-eligible transmitted packets in the last -srd-window; absent when nothing was eligible.",
		}, []string{"device"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netperfkit_probe_skipped_total",
			Help: "Probes not run, by reason: budget (throughput byte budget spent).",
		}, []string{"peer", "reason"}),
	}
	m.fleetMetrics(nativeOnly)
	m.zoneMetrics(nativeOnly)
	m.rttKernel = prometheus.NewHistogramVec(nativeOpts(prometheus.HistogramOpts{
		Name:    "netperfkit_probe_rtt_kernel_seconds",
		Help:    "Kernel-to-kernel round-trip time to the peer, one observation per answered message that has both stamps: from the request's software transmit stamp to the reply's receive stamp, both this host's kernel's (linux). It leaves out the agent's own scheduling, so it measures the path (and the peer's server) even while the agent is starved: probes flagged as starved are in it too. Absent where the kernel gives no stamps.",
		Buckets: rttBuckets,
	}, nativeOnly), []string{"peer"})
	m.reg.MustRegister(m.rttKernel)
	m.rttSocketDrops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netperfkit_probe_rtt_socket_drops_total",
		Help: "Replies to the peer's RTT probes that this host's kernel dropped on the probe's own socket (SO_MEMINFO drops, linux; mostly a full receive buffer), read at each probe's end. They are among the lost messages of netperfkit_probe_errors_total{kind=\"lost\"}, which otherwise reads as loss on the path. Absent where the counter cannot be read.",
	}, []string{"peer"})
	m.reg.MustRegister(m.rttSocketDrops)
	m.reg.MustRegister(m.rtt, m.rttMessages, m.rttLoss, m.rttWake, m.errs, m.tput, m.tputBytes, m.cachePhase, m.srdRatio, m.skipped,
		buildInfo(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// fleetMetrics makes the metrics of peer discovery, the topology and the
// agent's starvation (issue 33).
func (m *metrics) fleetMetrics(nativeOnly bool) {
	h := prometheus.NewHistogram(nativeOpts(prometheus.HistogramOpts{
		Name:    "netperfkit_probe_rtt_starved_seconds",
		Help:    "Round trips of RTT probes run while the agent was starved of CPU (see netperfkit_probe_starved_total), all peers together: kept out of netperfkit_probe_rtt_seconds, since they time the agent, not the path.",
		Buckets: rttBuckets,
	}, nativeOnly))
	m.rttStarved = h
	m.starved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netperfkit_probe_starved_total",
		Help: "Probes run while the agent was starved of CPU, by probe kind (rtt: their round trips are in netperfkit_probe_rtt_starved_seconds; cache: counted only, their phases stay in netperfkit_cache_phase_seconds) and reason: throttled (its cgroup's CPU quota throttled it during the probe) or wait (its threads waited for a CPU during the probe at least -starved-wait per message).",
	}, []string{"kind", "reason"})
	m.dnsLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netperfkit_peers_dns_lookups_total",
		Help: "Lookups of the -peers-dns name by result: ok, or error (SERVFAIL, timeout...: the last good peers are kept).",
	}, []string{"result"})
	m.dnsPeers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "netperfkit_peers_dns_peers",
		Help: "Peers the last good lookup of the -peers-dns name gave, the agent's own addresses left out.",
	})
	m.meshPeers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "netperfkit_mesh_peers",
		Help: "The probe topology (-mesh), by state: known (peers from -peers, -peers-file and -peers-dns), probed_per_period (RTT probes an agent runs a period), series (peers whose series the agent holds: at most -peer-series, the same ones while the fleet is).",
	}, []string{"state"})
	m.reg.MustRegister(h, m.starved, m.dnsLookups, m.dnsPeers, m.meshPeers)
}

// zoneMetrics makes the RTT series by (source zone, destination zone):
// the fleet-wide view, a few series per agent whatever the fleet's size
// (issue 41).
func (m *metrics) zoneMetrics(nativeOnly bool) {
	m.rttZone = prometheus.NewHistogramVec(nativeOpts(prometheus.HistogramOpts{
		Name:    "netperfkit_probe_rtt_zone_seconds",
		Help:    "UDP ping-pong round-trip time from this agent's zone (src_zone: -zone, or EC2's Availability Zone) to the probed peer's (dst_zone: the -zones subnet holding its address; unknown when none), every peer's round trips, whether or not the peer holds per-peer series (-peer-series); the observations of netperfkit_probe_rtt_seconds, summed by zone pair. Sum it over the fleet's agents by (src_zone, dst_zone) for a zone pair's quantiles.",
		Buckets: rttBuckets,
	}, nativeOnly), []string{"src_zone", "dst_zone"})
	m.rttZoneMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netperfkit_probe_rtt_zone_messages_total",
		Help: "RTT probe messages by zone pair (see netperfkit_probe_rtt_zone_seconds) and result: answered (starved probes' included) or lost, as netperfkit_probe_rtt_messages_total counts them.",
	}, []string{"src_zone", "dst_zone", "result"})
	m.reg.MustRegister(m.rttZone, m.rttZoneMessages)
}

// observeZone records one RTT probe in its zone pair's series.
func (m *metrics) observeZone(src, dst string, r rttResult) {
	if len(r.samples) > 0 && r.starved == "" {
		h := m.rttZone.WithLabelValues(src, dst)
		for _, d := range r.samples {
			h.Observe(d.Seconds())
		}
	}
	if r.lost > 0 {
		m.rttZoneMessages.WithLabelValues(src, dst, "lost").Add(float64(r.lost))
	}
	if a := r.messages() - r.lost; a > 0 {
		m.rttZoneMessages.WithLabelValues(src, dst, "answered").Add(float64(a))
	}
}

// buildInfo is netperfkit_build_info: 1, labelled with the module version,
// the VCS revision when the binary carries it, and the Go version.
func buildInfo() prometheus.Collector {
	version, revision := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "netperfkit_build_info",
		Help:        "A metric with a constant '1' value labeled by the agent's version, revision and goversion.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

// observeRTT records one RTT probe: its round trips, its lost messages and
// its loss ratio (left as it was by a probe that ended before any message
// was answered or lost).
func (m *metrics) observeRTT(peer string, r rttResult) {
	if len(r.samples) > 0 {
		h := prometheus.Observer(m.rttStarved)
		if r.starved == "" {
			h = m.rtt.WithLabelValues(peer)
		}
		for _, d := range r.samples {
			h.Observe(d.Seconds())
		}
	}
	if r.lost > 0 {
		m.errs.WithLabelValues(peer, "lost").Add(float64(r.lost))
	}
	if n := r.messages(); n > 0 {
		m.rttMessages.WithLabelValues(peer).Add(float64(n))
		m.rttLoss.WithLabelValues(peer).Set(float64(r.lost) / float64(n))
	}
	if r.socketDrops != nil {
		m.rttSocketDrops.WithLabelValues(peer).Add(float64(*r.socketDrops))
	}
	if r.wakeP99 > 0 {
		m.rttWake.WithLabelValues(peer).Set(r.wakeP99.Seconds())
	}
	if len(r.kernel) > 0 {
		h := m.rttKernel.WithLabelValues(peer)
		for _, d := range r.kernel {
			h.Observe(d.Seconds())
		}
	}
}

func (m *metrics) probeError(peer, kind string) { m.errs.WithLabelValues(peer, kind).Inc() }

// forgetPeer deletes every series of a peer that left the peer list.
func (m *metrics) forgetPeer(peer string) {
	l := prometheus.Labels{"peer": peer}
	m.rtt.DeletePartialMatch(l)
	m.rttMessages.DeletePartialMatch(l)
	m.rttLoss.DeletePartialMatch(l)
	m.rttWake.DeletePartialMatch(l)
	m.rttKernel.DeletePartialMatch(l)
	m.rttSocketDrops.DeletePartialMatch(l)
	m.errs.DeletePartialMatch(l)
	m.tput.DeletePartialMatch(l)
	m.tputBytes.DeletePartialMatch(l)
	m.skipped.DeletePartialMatch(l)
}
