package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportEndToEnd runs the whole report with tiny durations against the
// embedded servers and a local redis-server, and checks every section of the
// tables and every file of -out.
func TestReportEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if _, err := exec.LookPath("valkey-server"); err != nil {
			peertest.Missing(t, "no redis-server or valkey-server for the cache section", "apt-get install redis-server redis-tools")
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := run(ctx, []string{
		"-d", "300ms", "-rtt-d", "600ms", "-cache-d", "300ms", "-runs", "2", "-probes", "20",
		"-rates", "100M,1G", "-streams", "2", "-mstreams", "2", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	text := stdout.String()
	for _, want := range []string{
		"E1 paths", "1 flow (Gbit/s)", "2 streams (Gbit/s)", "RTT p99.9 (us)", "coverage (%)", "loopback",
		"E2 matrix", "TCP 1 stream", "TCP 2 streams", "download", "UDP target 100M", "UDP target 1G", "% of limit",
		"E3 cache: connection phases", "local, no TLS", "local, TLS", "CLUSTER SLOTS",
		"E3 cache: pooled vs connect-per-op", "pool", "connect", "ratios",
	} {
		assert.Contains(t, text, want)
	}
	assert.Empty(t, stderr.String(), "no progress output when stderr is not a terminal")

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, k := range []string{"paths", "matrix", "cache"} {
		require.Contains(t, rep, k)
	}
	var c struct {
		Phases []struct {
			Config  string             `json:"config"`
			Medians map[string]float64 `json:"medians"`
		} `json:"phases"`
		Modes map[string]struct {
			P50Us     latency.Range `json:"p50_us"`
			OpsPerSec latency.Range `json:"ops_per_sec"`
			Attempts  int64         `json:"attempts"`
		} `json:"modes"`
	}
	require.NoError(t, json.Unmarshal(rep["cache"], &c))
	require.Len(t, c.Phases, 2)
	assert.Zero(t, c.Phases[0].Medians["tls_us"], "no TLS phase on the plain server")
	assert.Positive(t, c.Phases[1].Medians["tls_us"], "TLS phase on the TLS server")
	for _, m := range []string{"pool", "connect"} {
		require.Contains(t, c.Modes, m)
		assert.Positive(t, c.Modes[m].OpsPerSec.Median, m)
		assert.Positive(t, c.Modes[m].P50Us.Median, m)
		assert.Equal(t, 2, c.Modes[m].P50Us.N, "two runs")
	}
	assert.Greater(t, c.Modes["pool"].OpsPerSec.Median, c.Modes["connect"].OpsPerSec.Median, "reusing a connection beats connecting per operation")

	var m MatrixSection
	require.NoError(t, json.Unmarshal(rep["matrix"], &m))
	require.Len(t, m.Rows, 6)
	for _, r := range m.Rows {
		assert.Empty(t, r.Error, r.Scenario)
		// The figure itself may be 0: a loaded machine can hold loopback
		// data back for a whole short run (issue 15).
		assert.InDelta(t, 100*r.ReceivedBitsPerSecond/5e9, r.PercentOfLimit, 1e-6, r.Scenario)
	}

	var p PathsSection
	require.NoError(t, json.Unmarshal(rep["paths"], &p))
	require.Len(t, p.Targets, 1)
	tg := p.Targets[0]
	// The throughput figures may be 0: a loaded machine can hold loopback
	// data back for a whole short phase (issue 15).
	assert.Positive(t, tg.RTT.Observations)
	assert.LessOrEqual(t, tg.RTT.P50Us, tg.RTT.P99Us)

	for _, f := range []string{"rtt-spectrum.svg", "rtt-spectrum.png", "cache-spectrum.svg", "cache-spectrum.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Greater(t, st.Size(), int64(1000), f)
	}
}

func TestReportSkipsAndFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-skip", "bogus"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "unknown part")

	stderr.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"-limit", "fast", "-skip", "paths,cache"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-limit")
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"5G": 5e9, "1.5g": 1.5e9, "100M": 1e8, "64K": 64e3, "1000": 1000} {
		got, err := parseRate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "G", "-1G", "5X"} {
		_, err := parseRate(in)
		assert.Error(t, err, in)
	}
	assert.Equal(t, "5G", formatRate(5e9))
	assert.Equal(t, "100M", formatRate(1e8))
}

func TestParseDefaultRoute(t *testing.T) {
	const route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth1\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"ens5\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	got, err := parseDefaultRoute(strings.NewReader(route))
	require.NoError(t, err)
	assert.Equal(t, "ens5", got)
	_, err = parseDefaultRoute(strings.NewReader(route[:strings.Index(route, "ens5")]))
	assert.ErrorContains(t, err, "no default route")
}
