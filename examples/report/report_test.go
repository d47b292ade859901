package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportEndToEnd runs the whole report with tiny durations against the
// in-process servers and a local redis-server (or, without one, the
// in-process miniredis), and checks every section of the tables and every
// file of -out.
func TestReportEndToEnd(t *testing.T) {
	first, embedded := embeddedLabel, true
	if bins := localServerBinaries(); len(bins) > 0 {
		// The first installed server's clusters (-cache-servers first).
		first, embedded = localClusterConfigs(bins[0])[0].label, false
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	// Two local clusters and the failover drill take minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	code := run(ctx, []string{
		"-d", "300ms", "-rtt-d", "1s", "-cache-d", "300ms", "-runs", "2", "-probes", "20",
		"-rates", "100M,1G", "-streams", "2", "-mstreams", "2", "-i", "100ms", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	text := stdout.String()
	for _, want := range []string{
		"run metadata", "E1 paths", "1 flow (Gbit/s)", "2 streams (Gbit/s)", "RTT p99.9 (us)", "coverage (%)", "loopback",
		"E2 matrix", "TCP 1 stream", "TCP 2 streams", "download", "UDP target 100M", "UDP target 1G", "% of limit",
		"E3 cache: connection phases", first + " TLS+ACL", "CLUSTER SLOTS",
		"E3 cache: pooled vs connect-per-op", "pool p50 (us)", "connect ops/s", "closing", "request", "timeout", "ratios",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, stderr.String(), "left)", "no progress output when stderr is not a terminal")

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, k := range []string{"paths", "matrix", "cache"} {
		require.Contains(t, rep, k)
	}
	var c CacheSection
	require.NoError(t, json.Unmarshal(rep["cache"], &c))
	byLabel := map[string]*CacheEndpoint{}
	for _, ce := range c.Endpoints {
		byLabel[ce.Label] = ce
	}
	require.Contains(t, byLabel, first)
	require.Contains(t, byLabel, first+" TLS+ACL")
	if embedded {
		assert.True(t, strings.HasPrefix(c.ServerNote, embeddedNote), c.ServerNote)
		assert.Contains(t, text, "NOTE: "+embeddedNote)
	} else {
		assert.Empty(t, c.ServerNote, "real servers carry no miniredis note")
	}
	if len(localServerBinaries()) > 1 {
		require.Contains(t, byLabel, "valkey cluster", "valkey-server is installed: the local default runs it, not redis-server")
		assert.NotContains(t, byLabel, "redis cluster", "-cache-servers first: one server's clusters")
	}
	missed := false
	for _, ce := range c.Endpoints {
		require.NotNil(t, ce.Medians, ce.Label)
		require.Empty(t, ce.ProbeError, ce.Label)
		if strings.Contains(ce.Label, "TLS") {
			assert.Positive(t, ce.Medians.TLSUs, "TLS phase on the TLS server %s", ce.Label)
			assert.Positive(t, ce.Medians.AuthUs, "AUTH on the ACL server %s", ce.Label)
		} else {
			assert.Zero(t, ce.Medians.TLSUs, "no TLS phase on the plain server %s", ce.Label)
		}
		require.NotEmpty(t, ce.Workloads, "workloads run on every endpoint: %s", ce.Label)
		for _, w := range ce.Workloads {
			if missedWindow(t, ce.Label, w) {
				missed = true
				continue
			}
			assert.Empty(t, w.Error, "%s %s", ce.Label, w.Engine)
			for _, a := range []*median.Result{w.Pool, w.Connect} {
				require.NotNil(t, a, "%s %s", ce.Label, w.Engine)
				// Operations completed, however slowly: a loaded machine
				// may finish none inside a 300 ms window (ops/s 0).
				assert.Positive(t, a.Succeeded, "%s %s %s", ce.Label, w.Engine, a.Mode)
				assert.Equal(t, a.Attempts, a.Succeeded+a.Errors, "%s %s %s", ce.Label, w.Engine, a.Mode)
				assert.Equal(t, 2, a.P50.N, "two runs")
			}
		}
	}
	if !embedded {
		checkClusterE3(t, text, &c)
	}
	resp := byLabel[first].Workloads[len(byLabel[first].Workloads)-1]
	require.Equal(t, "resp", resp.Engine)
	if missed {
		return // which ratio rows exist depends on the modes that ran
	}
	// Which mode is faster is the machine's to say; that each ran in its
	// mode is the report's.
	for _, r := range resp.Pool.Results {
		assert.Equal(t, cache.Pooled, r.Mode)
	}
	for _, r := range resp.Connect.Results {
		assert.Equal(t, cache.ConnectPerOp, r.Mode)
	}
	kinds := map[string]int{}
	for _, cmp := range c.Comparisons {
		kinds[cmp.Kind]++
	}
	assert.Equal(t, len(c.Endpoints), kinds["connect/pool"])
	assert.Equal(t, 2*(len(c.Endpoints)-1), kinds["endpoint"], "every endpoint against the first, pool and connect")

	var m MatrixSection
	require.NoError(t, json.Unmarshal(rep["matrix"], &m))
	require.Len(t, m.Rows, 6)
	for _, r := range m.Rows {
		assert.Empty(t, r.Error, r.Scenario)
		// The figure itself may be 0: a loaded machine can hold loopback
		// data back for a whole short run (issue 15).
		assert.InDelta(t, 100*r.ReceivedBitsPerSecond/5e9, r.PercentOfLimit, 1e-6, r.Scenario)
		require.NotEmpty(t, r.Intervals, "the interval series is kept: %s", r.Scenario)
		for _, iv := range r.Intervals {
			assert.Greater(t, iv.EndSeconds, iv.StartSeconds, r.Scenario)
		}
		if r.Protocol == "udp" {
			assert.InDelta(t, 100*r.ReceivedBitsPerSecond/r.TargetBitsPerSecond, r.DeliveredPercent, 1e-6, r.Scenario)
		}
	}
	assert.Equal(t, 0.1, m.IntervalSeconds)

	var p PathsSection
	require.NoError(t, json.Unmarshal(rep["paths"], &p))
	require.Len(t, p.Targets, 1)
	tg := p.Targets[0]
	// The throughput figures may be 0: a loaded machine can hold loopback
	// data back for a whole short phase (issue 15).
	// A round trip was sent and accounted for, answered or dropped.
	assert.Positive(t, tg.RTT.Observations+tg.RTT.Dropped)
	assert.LessOrEqual(t, float64(tg.RTT.P50)/1e3, float64(tg.RTT.P99)/1e3)

	for _, f := range []string{"rtt-spectrum.svg", "rtt-spectrum.png", "matrix-throughput.svg", "matrix-throughput.png", "cache-spectrum.svg", "cache-spectrum.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Greater(t, st.Size(), int64(1000), f)
	}
}

// missedWindow reports, and logs, whether w's error is cache's "no
// operation ran in the window": a loaded machine may start no operation
// within a short run (docs/testing.md: no amount of progress in a fixed
// time); that the row records it is the report's part.
func missedWindow(t *testing.T, label string, w *CacheWorkload) bool {
	t.Helper()
	if strings.Contains(w.Error, "no operation ran in the") {
		t.Logf("%s %s: %s: the machine started no operation in the window", label, w.Engine, w.Error)
		return true
	}
	return false
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

// TestReportJSONSurvivesPlotFailure makes the RTT plot impossible (a
// directory holds its file name) and checks that report.json is written,
// names the failed plots, and that the run still succeeds.
func TestReportJSONSurvivesPlotFailure(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(out, "rtt-spectrum.svg"), 0o755))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-skip", "matrix,cache", "-imds", "off",
		"-d", "200ms", "-rtt-d", "1s", "-streams", "2", "-out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "plot rtt-spectrum.svg not drawn")
	assert.Contains(t, stdout.String(), "plot not drawn: rtt-spectrum.svg")
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep struct {
		Plots      []string        `json:"plots"`
		PlotErrors []string        `json:"plot_errors"`
		Metadata   map[string]any  `json:"metadata"`
		Paths      *PathsSection   `json:"paths"`
		Matrix     json.RawMessage `json:"matrix"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.PlotErrors, 1)
	assert.Contains(t, rep.PlotErrors[0], "rtt-spectrum.svg")
	assert.Equal(t, []string{"rtt-spectrum.png"}, rep.Plots, "the other format is still drawn")
	require.NotNil(t, rep.Paths)
	assert.Positive(t, rep.Paths.Targets[0].RTT.Observations+rep.Paths.Targets[0].RTT.Dropped, "a round trip was sent and accounted for")
	assert.Equal(t, "null", string(rep.Matrix))
	for _, k := range []string{"host", "os", "cpus", "go_version", "netperfkit_version", "ec2_note", "settings"} {
		assert.Contains(t, rep.Metadata, k)
	}
	assert.Equal(t, "off", rep.Metadata["settings"].(map[string]any)["imds"])
}
