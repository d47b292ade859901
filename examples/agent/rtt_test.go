package main

import (
	"context"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency/latencytest"
)

// lossySockperf starts a sockperf-compatible UDP server on loopback that
// drops the reply to the n-th measured message it serves (n from 1, warm-up
// messages get no reply) when drop(n) says so; there is no netem here. It
// returns the server's port.
func lossySockperf(t *testing.T, drop func(n int) bool) int {
	t.Helper()
	return impairedSockperf(t, func(n int) (time.Duration, bool) { return 0, drop(n) })
}

// impairedSockperf is lossySockperf with impair saying, for the n-th
// measured message, whether to drop its reply or how long to hold it back.
func impairedSockperf(t *testing.T, impair func(n int) (delay time.Duration, drop bool)) int {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp", Impair: func(uint64) (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return impair(n)
	}})
	_, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return p
}

// peerValue is the value of the series of name for peer (and kind, when not
// empty) in mfs: a counter's or gauge's value, a histogram's count.
func peerValue(mfs map[string]*dto.MetricFamily, name, peer, kind string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["peer"] != peer || kind != "" && labels["kind"] != kind {
			continue
		}
		switch {
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestAgentRTTOnLossyPath runs the agent against a peer that loses every
// tenth reply, with 1000 messages a probe. Each probe must measure all of
// them within -probe-timeout and export 900 round trips, 100 lost messages
// and a loss ratio of 0.1. The adaptive timeout is the mechanism: with the
// whole 1 s cap per loss a probe would need 100 s and hit the 30 s
// -probe-timeout after about 300 messages, while a loaded machine's
// slower round trips stay far inside it.
func TestAgentRTTOnLossyPath(t *testing.T) {
	port := lossySockperf(t, func(n int) bool { return n%10 == 0 })
	self := "127.0.0.1:1:" + itoa(port)
	url, log, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo",
		"-peers", self, "-rtt-every", "200ms", "-rtt-count", "1000", "-probe-timeout", "30s",
		// Not about starvation: on a loaded machine a probe flagged as
		// starved would put its round trips in the other histogram.
		"-starved-wait", "1h")
	name := "127.0.0.1"
	var mfs map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		mfs = scrape(t, url)
		n, _ := peerValue(mfs, "netperfkit_probe_rtt_seconds", name, "")
		r := peerRTT(mfs, name)
		// A probe's round trips are exported as they are measured, its
		// message counts and loss ratio when it ends: wait for both.
		return n >= 900 && r.hasMessages && r.hasRatio
	}, 60*time.Second, 100*time.Millisecond, "no probe measured 900 round trips and ended:\n%s", log.String())
	// One probe or more ended; each adds the same numbers.
	r := peerRTT(mfs, name)
	require.True(t, r.hasMessages, "netperfkit_probe_rtt_messages_total")
	require.True(t, r.hasRatio, "netperfkit_probe_rtt_loss_ratio")
	probes := r.messages / 1000
	assert.Positive(t, probes)
	assert.Equal(t, 900*probes, r.answered)
	assert.Equal(t, 100*probes, r.lost)
	assert.InDelta(t, 0.1, r.ratio, 1e-9)
	assert.Zero(t, r.timeouts, "every probe ended before -probe-timeout")
	// The agent's own share: on linux each reply's kernel arrival is
	// known, and its read is inside the round trip, which a measured reply
	// completed within its cap, min(1s, -probe-timeout).
	if runtime.GOOS == "linux" {
		wake, ok := peerValue(mfs, "netperfkit_probe_rtt_receive_wake_p99_seconds", name, "")
		require.True(t, ok, "netperfkit_probe_rtt_receive_wake_p99_seconds")
		assert.Positive(t, wake)
		assert.LessOrEqual(t, wake, 1.0, "the wake is inside a round trip within the reply cap")
	}
	// And the kernel-to-kernel view of the same round trips (issue 31).
	if runtime.GOOS == "linux" {
		found := false
		for _, mf := range mfs {
			if mf.GetName() == "netperfkit_probe_rtt_kernel_seconds" {
				for _, mm := range mf.GetMetric() {
					for _, lp := range mm.GetLabel() {
						if lp.GetName() == "peer" && lp.GetValue() == name {
							found = mm.GetHistogram().GetSampleCount() > 0
						}
					}
				}
			}
		}
		assert.True(t, found, "netperfkit_probe_rtt_kernel_seconds has the peer's round trips")
	}
}

// rttSeries is what the agent exported for one peer's RTT probes: round
// trips answered, messages lost, probes that timed out, messages in all,
// and the last probe's loss ratio (hasMessages and hasRatio: the series
// exist).
type rttSeries struct {
	answered, lost, timeouts, messages, ratio float64
	hasMessages, hasRatio                     bool
}

func peerRTT(mfs map[string]*dto.MetricFamily, peer string) rttSeries {
	var r rttSeries
	r.answered, _ = peerValue(mfs, "netperfkit_probe_rtt_seconds", peer, "")
	r.lost, _ = peerValue(mfs, "netperfkit_probe_errors_total", peer, "lost")
	r.timeouts, _ = peerValue(mfs, "netperfkit_probe_errors_total", peer, "timeout")
	r.messages, r.hasMessages = peerValue(mfs, "netperfkit_probe_rtt_messages_total", peer, "")
	r.ratio, r.hasRatio = peerValue(mfs, "netperfkit_probe_rtt_loss_ratio", peer, "")
	return r
}

// probeOnce runs one RTT probe of the agent configured by c against the
// server at port and returns the metrics it exported.
func probeOnce(t *testing.T, c config, port int) map[string]*dto.MetricFamily {
	t.Helper()
	probes, err := agentProbes(c)
	require.NoError(t, err)
	m := newMetrics()
	ms := newMesh(context.Background(), meshConfig{rttTimeout: time.Duration(c.ProbeTimeout), metrics: m,
		log: slog.New(slog.DiscardHandler), probes: probes})
	start := time.Now()
	ms.probeRTT(context.Background(), peer{Host: "127.0.0.1", SockperfPort: port})
	// A liveness bound: the probe ends on -probe-timeout, not after its
	// 1000 messages' caps (the tests' timeouts counters show which).
	assert.Less(t, time.Since(start), time.Duration(c.ProbeTimeout)+10*time.Second, "bounded by -probe-timeout")

	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// TestRTTProbeCutShortByProbeTimeout: the path dies after 20 replies. The
// probe ends at -probe-timeout (4 s), exports the 20 round trips and the
// messages lost (sent more than the 1 s cap before: every one of the first
// 3 s), and counts as a timeout.
func TestRTTProbeCutShortByProbeTimeout(t *testing.T) {
	port := lossySockperf(t, func(n int) bool { return n > 20 })
	c := defaults()
	c.RTTCount, c.ProbeTimeout = 1000, duration(4*time.Second)
	mfs := probeOnce(t, c, port)
	r := peerRTT(mfs, "127.0.0.1")
	assert.Equal(t, 20.0, r.answered)
	assert.Positive(t, r.lost, "the replies that stopped coming")
	assert.Equal(t, r.answered+r.lost, r.messages)
	assert.Equal(t, 1.0, r.timeouts, "the probe did not finish its 1000 messages")
}

// TestRTTProbeCutShortWithinCap: the path dies after 20 replies, and
// -probe-timeout (1 s, also the reply timeout's cap) ends the probe before
// any message's cap has passed: the first reply is held back 50 ms, so
// every unanswered message went out at least 50 ms into the probe, whatever
// the machine's speed. The messages past their adaptive timeout could still
// have been answered: they are not lost, and the loss ratio is 0.
func TestRTTProbeCutShortWithinCap(t *testing.T) {
	port := impairedSockperf(t, func(n int) (time.Duration, bool) {
		if n == 1 {
			return 50 * time.Millisecond, false
		}
		return 0, n > 20
	})
	c := defaults()
	c.RTTCount, c.ProbeTimeout = 1000, duration(time.Second)
	mfs := probeOnce(t, c, port)
	r := peerRTT(mfs, "127.0.0.1")
	assert.Equal(t, 20.0, r.answered)
	assert.Zero(t, r.lost, "no message's reply was given up on")
	assert.Equal(t, 20.0, r.messages)
	assert.True(t, r.hasRatio, "netperfkit_probe_rtt_loss_ratio")
	assert.Zero(t, r.ratio)
	assert.Equal(t, 1.0, r.timeouts, "the probe did not finish its 1000 messages")
}

// TestRTTProbeShortCap: a reply timeout's cap below latency's default floor
// (10 ms) lowers the floor with it rather than making the probe invalid.
func TestRTTProbeShortCap(t *testing.T) {
	port := lossySockperf(t, func(int) bool { return false })
	r, err := rttProbe(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 3, 5*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.messages())
}

// An RTT probe carries its socket's drop counter (linux): none here, where
// the peer answers each message once.
func TestRTTProbeSocketDrops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_MEMINFO is linux's")
	}
	port := lossySockperf(t, func(int) bool { return false })
	r, err := rttProbe(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 3, time.Second)
	require.NoError(t, err)
	require.NotNil(t, r.socketDrops)
	assert.Zero(t, *r.socketDrops)
	m := newMetrics()
	m.observeRTT("p", r)
	assert.Equal(t, 0.0, testutil.ToFloat64(m.rttSocketDrops.WithLabelValues("p")))
}
