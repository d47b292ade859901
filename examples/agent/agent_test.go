package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtoolprom"
	"github.com/netperfkit/netperfkit/internal/peertest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricsNamesAndTypes(t *testing.T) {
	m := newMetrics()
	drops := int64(1)
	m.observeRTT("p", rttResult{samples: []time.Duration{time.Millisecond}, lost: 2, wakeP99: 20 * time.Microsecond, kernel: []time.Duration{900 * time.Microsecond}, socketDrops: &drops})
	m.probeError("p", "timeout")
	m.tput.WithLabelValues("p").Set(1e9)
	m.tputBytes.WithLabelValues("p").Add(10)
	m.cachePhase.WithLabelValues("c:6379", "connect").Observe(0.001)
	m.srdRatio.WithLabelValues("eth0").Set(0.97)
	m.skipped.WithLabelValues("p", "budget").Inc()
	m.reg.MustRegister(ethtoolprom.NewSnapshotCollector(&ethtool.Snapshot{Interface: "eth0", Driver: "ena",
		Stats: ethtool.Stats{{Name: "rx_bytes", Value: 1}, {Name: "ena_srd_mode", Value: 3}, {Name: "bw_in_allowance_exceeded", Value: 2}}}))
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	got := map[string]dto.MetricType{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetType()
		assert.NotEqual(t, dto.MetricType_UNTYPED, mf.GetType(), mf.GetName())
	}
	for name, typ := range map[string]dto.MetricType{
		"netperfkit_probe_rtt_seconds":                  dto.MetricType_HISTOGRAM,
		"netperfkit_probe_rtt_messages_total":           dto.MetricType_COUNTER,
		"netperfkit_probe_rtt_loss_ratio":               dto.MetricType_GAUGE,
		"netperfkit_probe_rtt_receive_wake_p99_seconds": dto.MetricType_GAUGE,
		"netperfkit_probe_rtt_kernel_seconds":           dto.MetricType_HISTOGRAM,
		"netperfkit_probe_rtt_socket_drops_total":       dto.MetricType_COUNTER,
		"netperfkit_probe_errors_total":                 dto.MetricType_COUNTER,
		"netperfkit_probe_throughput_bits_per_second":   dto.MetricType_GAUGE,
		"netperfkit_probe_throughput_sent_bytes_total":  dto.MetricType_COUNTER,
		"netperfkit_cache_phase_seconds":                dto.MetricType_HISTOGRAM,
		"netperfkit_srd_coverage_ratio":                 dto.MetricType_GAUGE,
		"netperfkit_probe_skipped_total":                dto.MetricType_COUNTER,
		"netperfkit_build_info":                         dto.MetricType_GAUGE,
		"node_ethtool_info":                             dto.MetricType_GAUGE,
		"node_ethtool_received_bytes_total":             dto.MetricType_COUNTER,
		"node_ethtool_ena_srd_mode":                     dto.MetricType_GAUGE,
		"node_ethtool_bw_in_allowance_exceeded":         dto.MetricType_COUNTER,
		"process_cpu_seconds_total":                     dto.MetricType_COUNTER,
	} {
		if assert.Contains(t, got, name) {
			assert.Equal(t, typ, got[name], name)
		}
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "netperfkit_probe_errors_total":
			assert.Len(t, mf.GetMetric(), 2, "timeout and lost")
		case "netperfkit_build_info":
			labels := map[string]string{}
			for _, l := range mf.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			assert.Contains(t, labels, "version")
			assert.Contains(t, labels, "goversion")
		}
	}
}

// startAgent runs the agent in-process with args (plus a loopback metrics
// port and JSON logs) and returns its /metrics URL, its log and a stop
// function that reports how long the agent took to return.
func startAgent(t *testing.T, hup chan os.Signal, args ...string) (string, *peertest.Buffer, func() time.Duration) {
	t.Helper()
	var log peertest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = append([]string{"-metrics", "127.0.0.1:0", "-log-format", "json", "-log-level", "debug"}, args...)
	go func() { done <- run(ctx, args, &log, hup) }()
	var addr string
	require.Eventually(t, func() bool {
		addr = readyAddr(log.String())
		select {
		case err := <-done:
			t.Fatalf("agent ended early: %v\n%s", err, log.String())
		default:
		}
		return addr != ""
	}, 10*time.Second, 10*time.Millisecond)
	stopped := false
	stop := func() time.Duration {
		if stopped {
			return 0
		}
		stopped = true
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("agent did not stop")
		}
		return time.Since(start)
	}
	t.Cleanup(func() { stop() })
	return "http://" + addr + "/metrics", &log, stop
}

func readyAddr(log string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var l struct{ Msg, Metrics string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "agent ready" {
			return l.Metrics
		}
	}
	return ""
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	return parseMetrics(t, fetch(t, url))
}

// fetch is the text /metrics serves at url.
func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func parseMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return mfs
}

// TestAgentProbesItselfAndStopsQuickly runs a whole agent on loopback whose
// only peer is itself, so its servers answer its probes.
func TestAgentProbesItselfAndStopsQuickly(t *testing.T) {
	ip, sp := peertest.FreePort(t), peertest.FreePort(t)
	self := "127.0.0.1:" + itoa(ip) + ":" + itoa(sp)
	url, log, stop := startAgent(t, nil, "-iperf3-port", itoa(ip), "-sockperf-port", itoa(sp),
		"-listen", "127.0.0.1", "-peers", self, "-rtt-every", "50ms", "-tput-every", "1s", "-tput-bytes", "200000",
		"-tput-duration", "1s", "-iface", "lo")
	var mfs map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		mfs = scrape(t, url)
		return hasSample(mfs, "netperfkit_probe_rtt_seconds", 10) && hasSample(mfs, "netperfkit_probe_throughput_bits_per_second", 1)
	}, 15*time.Second, 100*time.Millisecond, "log:\n%s", log)
	h := mfs["netperfkit_probe_rtt_seconds"].GetMetric()[0]
	assert.Equal(t, "127.0.0.1", h.GetLabel()[0].GetValue())
	mean := h.GetHistogram().GetSampleSum() / float64(h.GetHistogram().GetSampleCount())
	assert.Greater(t, mean, 0.0)
	// A reply later than its cap is lost, not measured: no round trip, and
	// so no mean, exceeds the cap, however slow the machine.
	assert.LessOrEqual(t, mean, rttReplyTimeout(defaults()).Seconds(), "round trips within the reply cap")
	assert.Greater(t, mfs["netperfkit_probe_throughput_bits_per_second"].GetMetric()[0].GetGauge().GetValue(), 0.0)
	assert.Contains(t, mfs, "netperfkit_build_info")
	// Every probe and server ended on the cancel (shutdown logs "agent
	// stopped", not that it gave up waiting); how fast is the machine's.
	t.Logf("stopped in %v", stop())
	assert.Contains(t, log.String(), `"msg":"agent stopped"`)
	assert.NotContains(t, log.String(), "agent stopped before every probe and server ended")
}

func hasSample(mfs map[string]*dto.MetricFamily, name string, n uint64) bool {
	mf, ok := mfs[name]
	if !ok || len(mf.GetMetric()) == 0 {
		return false
	}
	m := mf.GetMetric()[0]
	if m.GetHistogram() != nil {
		return m.GetHistogram().GetSampleCount() >= n
	}
	return m.GetGauge() != nil && m.GetGauge().GetValue() > 0
}

func TestAgentReloadsPeersOnSIGHUP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "peers")
	// Port 1 on loopback: nobody listens, so probes are refused at once.
	require.NoError(t, os.WriteFile(file, []byte("127.0.0.1:1:1\n"), 0o600))
	hup := make(chan os.Signal, 1)
	url, log, _ := startAgent(t, hup, "-iperf3-port", "0", "-sockperf-port", "0", "-peers-file", file,
		"-rtt-every", "50ms", "-iface", "lo")
	require.Eventually(t, func() bool {
		return errorsFor(scrape(t, url), "127.0.0.1", "refused") >= 2
	}, 10*time.Second, 50*time.Millisecond, "log:\n%s", log)
	require.NoError(t, os.WriteFile(file, []byte("127.0.0.2:1:1 # moved\n"), 0o600))
	hup <- syscall.SIGHUP
	require.Eventually(t, func() bool {
		mfs := scrape(t, url)
		return errorsFor(mfs, "127.0.0.2", "refused") >= 2 && errorsFor(mfs, "127.0.0.1", "refused") < 0
	}, 10*time.Second, 50*time.Millisecond, "log:\n%s", log)
	assert.Contains(t, log.String(), "peers reloaded")
}

// errorsFor returns netperfkit_probe_errors_total for peer and kind, or -1
// when the series does not exist.
func errorsFor(mfs map[string]*dto.MetricFamily, peer, kind string) float64 {
	for _, m := range mfs["netperfkit_probe_errors_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["peer"] == peer && l["kind"] == kind {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

func TestAgentRefusesBadStart(t *testing.T) {
	// A metrics address that is already taken.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	err = run(context.Background(), []string{"-metrics", taken.Addr().String(), "-listen", "127.0.0.1",
		"-iperf3-port", itoa(peertest.FreePort(t)), "-sockperf-port", "0", "-iface", "lo"}, &peertest.Buffer{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metrics")
	assert.ErrorIs(t, err, syscall.EADDRINUSE)

	// The port-only form takes the -listen host, and that port is taken.
	_, port, err := net.SplitHostPort(taken.Addr().String())
	require.NoError(t, err)
	err = run(context.Background(), []string{"-metrics", port, "-listen", "127.0.0.1",
		"-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo"}, &peertest.Buffer{}, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EADDRINUSE)

	// A metrics address that cannot be bound at all.
	err = run(context.Background(), []string{"-metrics", "256.0.0.1:1", "-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo"}, &peertest.Buffer{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metrics")
	err = run(context.Background(), []string{"-peers", "h:notaport"}, &peertest.Buffer{}, nil)
	require.Error(t, err)
}

func itoa(n int) string { return strconv.Itoa(n) }

// buildAgent builds the agent binary for tests that run it as a process.
func buildAgent(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent")
	gobin, err := exec.LookPath("go")
	if err != nil {
		peertest.Missing(t, "the go command is not on PATH, needed to build the agent", "")
	}
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestAgentKeepsSecretsOutOfLogsAndMetrics probes a cache endpoint that
// refuses connections with a password set, at debug level, and looks for the
// password everywhere the agent writes.
func TestAgentKeepsSecretsOutOfLogsAndMetrics(t *testing.T) {
	const pw = "s3cret-Pa55word-xyz"
	t.Setenv("NETPERFKIT_CACHE_PASSWORD", pw)
	dead := "127.0.0.1:" + strconv.Itoa(peertest.FreePort(t))
	url, log, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo",
		"-cache", dead, "-cache-user", "probe", "-cache-every", "50ms", "-probe-timeout", "1s")
	var body string
	require.Eventually(t, func() bool {
		body = fetch(t, url)
		return errorsFor(parseMetrics(t, body), dead, "connect_refused") >= 2
	}, 10*time.Second, 50*time.Millisecond, "log:\n%s", log)
	assert.NotContains(t, body, pw)
	assert.NotContains(t, log.String(), pw)
	assert.Contains(t, log.String(), "cache probe failed", "the failure itself is logged")
	assert.NotContains(t, body, `phase="total"`, "a failed probe has no total")
}

// TestAgentKeepsWrongPasswordOutOfLogsAndMetrics sends a wrong password to a
// real server that requires an ACL user, at debug level, so the password
// goes over the wire and the server's WRONGPASS reply reaches the logs, and
// looks for the password everywhere the agent writes.
func TestAgentKeepsWrongPasswordOutOfLogsAndMetrics(t *testing.T) {
	srv := cachetest.NewServer(t, &cachetest.Config{User: "probe", Password: "the-Right-pw-41"})
	const wrong = "wr0ng-Pa55word-qz"
	t.Setenv("NETPERFKIT_CACHE_PASSWORD", wrong)
	url, log, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo",
		"-cache", srv.Addr, "-cache-user", "probe", "-cache-every", "50ms", "-probe-timeout", "2s")
	var body string
	require.Eventually(t, func() bool {
		body = fetch(t, url)
		return errorsFor(parseMetrics(t, body), srv.Addr, string(cache.ErrWrongPass)) >= 2
	}, 15*time.Second, 50*time.Millisecond, "log:\n%s", log)
	assert.Contains(t, log.String(), "cache probe failed", "the failure itself is logged")
	assert.Contains(t, log.String(), string(cache.ErrWrongPass))
	for _, secret := range []string{wrong, "the-Right-pw-41"} {
		assert.NotContains(t, body, secret)
		assert.NotContains(t, log.String(), secret)
	}
}

// TestAgentCacheProbeTLSAndACL probes a real redis-server or valkey-server
// that speaks TLS only and requires an ACL user, and checks every phase of
// the connection reaches netperfkit_cache_phase_seconds.
func TestAgentCacheProbeTLSAndACL(t *testing.T) {
	srv := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "probe", Password: "tls-acl-Secret-77"})
	password := srv.Endpoint().Password.Reveal()
	t.Setenv("NETPERFKIT_CACHE_PASSWORD", password)
	url, log, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-iface", "lo",
		"-cache", srv.Addr, "-cache-tls", "-cache-ca", srv.CAFile, "-cache-user", srv.Endpoint().User, "-cache-every", "50ms")
	want := []string{"connect", "tls", "auth", "command", "close", "total"}
	var mfs map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		mfs = scrape(t, url)
		seen := map[string]uint64{}
		for _, m := range mfs["netperfkit_cache_phase_seconds"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["endpoint"] == srv.Addr {
				seen[l["phase"]] = m.GetHistogram().GetSampleCount()
			}
		}
		for _, p := range want {
			if seen[p] < 2 {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "log:\n%s", log)
	for _, m := range mfs["netperfkit_probe_errors_total"].GetMetric() {
		assert.Zero(t, m.GetCounter().GetValue(), "%v", m.GetLabel())
	}
	assert.NotContains(t, log.String(), password)
}

// TestErrorsHelpNamesEveryKind checks that netperfkit_probe_errors_total's
// HELP names every kind the agent records, as the README does.
func TestErrorsHelpNamesEveryKind(t *testing.T) {
	m := newMetrics()
	m.probeError("p", "busy")
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	var help string
	for _, mf := range mfs {
		if mf.GetName() == "netperfkit_probe_errors_total" {
			help = mf.GetHelp()
		}
	}
	require.NotEmpty(t, help)
	kinds := []string{"timeout", "refused", "unreachable", "dns", "busy", "other", "lost"}
	for _, k := range []cache.ErrorKind{cache.ErrDNS, cache.ErrConnectRefused, cache.ErrConnectTimeout, cache.ErrConnect,
		cache.ErrTLSVerify, cache.ErrTLSHandshake, cache.ErrWrongPass, cache.ErrNoAuth, cache.ErrAuth, cache.ErrCluster,
		cache.ErrCommand, cache.ErrTimeout, cache.ErrConnection, cache.ErrClosing, cache.ErrRecovery, cache.ErrServer} {
		kinds = append(kinds, string(k))
	}
	for _, k := range kinds {
		assert.Regexp(t, `\b`+k+`\b`, help, k)
	}
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "`busy`")
}
