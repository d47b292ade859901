//go:build linux

package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveSockperfIn serves the sockperf-compatible UDP server on h's address
// in this process until the test ends, and returns its port.
func serveSockperfIn(t *testing.T, h *pathlab.Host) int {
	ctx, cancel := context.WithCancel(context.Background())
	var addr net.Addr
	var serve func() error
	require.NoError(t, h.Do(func() error {
		var err error
		addr, serve, err = listenSockperf(ctx, "udp", net.JoinHostPort(h.Addr.String(), "0"), serverLimits{maxConns: 4}, accessControl{})
		return err
	}))
	done := make(chan struct{})
	go func() { defer close(done); _ = serve() }()
	t.Cleanup(func() { cancel(); <-done })
	return addr.(*net.UDPAddr).Port
}

// TestWebConfigWithCurlAndPrometheus runs the built agent in one namespace
// with -web.config.file (TLS, basic auth with an htpasswd bcrypt hash) and
// -native-histograms-only, and from the other: curl without credentials
// is refused (401), curl with them gets the text scrape that promtool
// check metrics passes, and Prometheus 2.42 scraping over TLS with basic
// auth (and native histograms) has the target up, while its job without
// credentials has it down.
func TestWebConfigWithCurlAndPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the Prometheus-over-TLS test in -short mode")
	}
	peertest.Root(t)
	promBin := peertest.Binary(t, "apt-get install prometheus (scripts/install-peers.sh)", "prometheus")
	promtool := peertest.Binary(t, "apt-get install prometheus (scripts/install-peers.sh)", "promtool")
	curl := peertest.Binary(t, "apt-get install curl (scripts/install-peers.sh)", "curl")
	htpasswd := peertest.Binary(t, "apt-get install apache2-utils (scripts/install-peers.sh)", "htpasswd")
	pl := pathlab.New(t, &pathlab.Config{Prefix: "np41w"})
	if pl == nil || t.Skipped() {
		t.SkipNow()
	}
	l := &lab1k{Lab: pl, dir: t.TempDir()}
	pki := newWebPKI(t, l.A.Addr.String())

	// htpasswd -nbBC 10 prometheus PASS prints "prometheus:$2y$10$...".
	const pass = "scrape-s3cret"
	out := l.B.Run(t, htpasswd, "-nbBC", "10", "prometheus", pass)
	user, hash, ok := strings.Cut(strings.TrimSpace(out), ":")
	require.True(t, ok && user == "prometheus", "htpasswd output %q", out)
	webCfg := pki.webConfig(t, "", map[string]string{"prometheus": hash})

	port := serveSockperfIn(t, l.B)
	metricsAddr := net.JoinHostPort(l.A.Addr.String(), "9469")
	agent := buildAgent(t)
	_, agentLog := l.startIn(t, l.A, agent, "-metrics", metricsAddr, "-web.config.file", webCfg, "-native-histograms-only",
		"-peers", l.B.Addr.String()+"::"+strconv.Itoa(port), "-rtt-every", "200ms", "-iperf3-port", "0", "-sockperf-port", "0",
		"-zone", "az-a", "-zones", l.B.Addr.String()+"/32=az-b")
	url := "https://" + metricsAddr + "/metrics"
	curlCode := func(args ...string) string {
		cmd := l.B.Command(context.Background(), curl, append([]string{"-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki.caFile}, args...)...)
		b, _ := cmd.Output()
		return string(b)
	}
	require.Eventually(t, func() bool { return curlCode(url) == "401" }, 10*time.Second, 100*time.Millisecond,
		"curl without credentials is refused")
	assert.Equal(t, "401", curlCode("-u", "prometheus:wrong", url))
	assert.Equal(t, "200", curlCode("-u", "prometheus:"+pass, url))
	assert.Equal(t, "400", curlCode("http://"+metricsAddr+"/metrics"), "plain HTTP is answered only with Go's 400 \"client sent an HTTP request to an HTTPS server\"")

	// promtool check metrics on the text scrape, once RTT probes ran.
	require.Eventually(t, func() bool {
		b, err := l.B.Command(context.Background(), curl, "-sf", "--cacert", pki.caFile, "-u", "prometheus:"+pass, url).Output()
		return err == nil && strings.Contains(string(b), `netperfkit_probe_rtt_zone_seconds_count{dst_zone="az-b",src_zone="az-a"}`)
	}, 15*time.Second, 200*time.Millisecond)
	lint := l.B.Command(context.Background(), "sh", "-c", `"$0" -sf --cacert "$1" -u "prometheus:$2" "$3" | "$4" check metrics`,
		curl, pki.caFile, pass, url, promtool)
	lintOut, err := lint.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics:\n%s", lintOut)

	passFile := filepath.Join(l.dir, "password")
	require.NoError(t, os.WriteFile(passFile, []byte(pass), 0o600))
	tlsCfg := "    scheme: https\n    tls_config:\n      ca_file: " + pki.caFile + "\n"
	target := "    static_configs:\n      - targets: [\"" + metricsAddr + "\"]\n"
	cfg := "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n" +
		"  - job_name: with-credentials\n" + tlsCfg + "    basic_auth:\n      username: prometheus\n      password_file: " + passFile + "\n" + target +
		"  - job_name: without-credentials\n" + tlsCfg + target
	require.NoError(t, os.WriteFile(filepath.Join(l.dir, "prometheus.yml"), []byte(cfg), 0o600))
	const promAddr = "127.0.0.1:9090" // in B, new and empty: the port is free
	_, promLog := l.startIn(t, l.B, promBin, "--config.file="+filepath.Join(l.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(l.dir, "data"), "--web.listen-address="+promAddr,
		"--enable-feature=native-histograms")
	prom := newPromClient(l.B.NetnsPath(), promAddr)
	deadline := time.Now().Add(60 * time.Second)
	prom.eventually(t, deadline, `up{job="with-credentials"} == 1`, func(s []sample) bool { return len(s) == 1 })
	prom.eventually(t, deadline, `up{job="without-credentials"} == 0`, func(s []sample) bool { return len(s) == 1 })
	// Native histograms only: one series per zone pair, with a count.
	prom.eventually(t, deadline, `histogram_count(netperfkit_probe_rtt_zone_seconds{job="with-credentials",src_zone="az-a",dst_zone="az-b"}) > 0`,
		func(s []sample) bool { return len(s) == 1 })
	cl, err := prom.query(`netperfkit_probe_rtt_zone_seconds_bucket`)
	require.NoError(t, err)
	assert.Empty(t, cl, "no classic buckets")
	assert.NotContains(t, promLog.String()+agentLog.String(), pass, "the password is in no log")
}
