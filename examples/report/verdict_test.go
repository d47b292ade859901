package main

import (
	"time"

	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimitedByBand: "limit" only within 90-110% of it; a row far above
// says the stated limit was not in effect and is judged by the other
// checks (the reviewer's loopback run read "limit (837% of it)").
func TestLimitedByBand(t *testing.T) {
	tcp := func(recv, cpu float64, retr int64) *MatrixRow {
		return &MatrixRow{Protocol: "tcp", Streams: 1, ReceivedBitsPerSecond: recv, SenderCPUPercent: cpu, Retransmits: retr, PercentOfLimit: 100 * recv / 5e9}
	}
	udp := func(recv float64) *MatrixRow {
		return &MatrixRow{Protocol: "udp", Streams: 1, TargetBitsPerSecond: 10e9, SentBitsPerSecond: recv, ReceivedBitsPerSecond: recv, PercentOfLimit: 100 * recv / 5e9}
	}
	for _, c := range []struct {
		row        *MatrixRow
		by, detail string
	}{
		{tcp(5.4e9, 30, 0), "limit", "108% of it"},
		{tcp(4.5e9, 95, 3), "limit", "90% of it"},
		{tcp(41.85e9, 95, 268), "generator CPU", "95% of 1 core(s); 837% of the stated limit: it was not in effect"},
		{tcp(41.85e9, 30, 268), "above the stated limit", "837% of the stated limit: it was not in effect"}, // retransmits alone never decide
		{tcp(41.85e9, 30, 0), "above the stated limit", "837% of the stated limit: it was not in effect"},
		{tcp(41.85e9, -1, 0), "above the stated limit", "837% of the stated limit: it was not in effect"},
		{udp(4.76e9), "limit", "95% of it"},
		{udp(8e9), "above the stated limit", "160% of the stated limit: it was not in effect"},
	} {
		by, detail := limitedBy(c.row, 5e9, 2)
		assert.Equal(t, c.by, by, "%+v", c.row)
		assert.Equal(t, c.detail, detail, "%+v", c.row)
	}
}

// TestMatrixInProcessCPU: with the in-process server the CPU figure is the
// whole process's (client + server + GC), so it is labelled so and no row
// is judged generator-CPU-limited on it.
func TestMatrixInProcessCPU(t *testing.T) {
	res := &throughput.Result{CPU: throughput.CPUUtilization{HostTotal: 190, RemoteTotal: 180}}
	res.Upload = &throughput.Summary{Streams: 1}
	res.Upload.Sent.BitsPerSecond, res.Upload.Received.BitsPerSecond = 2e9, 2e9
	for _, inProcess := range []bool{true, false} {
		row := MatrixRow{Scenario: "TCP 1 stream", Direction: "upload", Protocol: "tcp", Streams: 1, Retransmits: -1}
		fillRow(&row, res, false, inProcess, 5e9)
		sec := &MatrixSection{Target: "127.0.0.1:1", LimitBitsPerSecond: 5e9, InProcessServer: inProcess, Rows: []MatrixRow{row}}
		var b bytes.Buffer
		require.NoError(t, writeMatrixText(&b, sec))
		if inProcess {
			assert.Equal(t, -1.0, row.SenderCPUPercent, "the sender's own share is unknown")
			assert.Equal(t, 190.0, row.ProcessCPUPercent)
			assert.Empty(t, row.LimitedBy, "no generator-CPU verdict on process CPU")
			assert.Contains(t, b.String(), "process CPU % (client+server)")
			assert.NotContains(t, b.String(), "sender CPU %")
		} else {
			assert.Equal(t, 190.0, row.SenderCPUPercent)
			assert.Equal(t, "generator CPU", row.LimitedBy)
			assert.Contains(t, b.String(), "sender CPU %")
		}
	}
}

func TestAllLoopback(t *testing.T) {
	tg := func(a, b string) srdexperiment.Target {
		return srdexperiment.Target{Name: "x", ThroughputAddr: a, PingPongAddr: b}
	}
	assert.True(t, allLoopback([]srdexperiment.Target{tg("127.0.0.1:5201", "127.0.0.1:11111"), tg("[::1]:5201", "localhost:11111"), tg("127.1.2.3:1", "[::ffff:127.0.0.1]:2")}))
	assert.False(t, allLoopback([]srdexperiment.Target{tg("127.0.0.1:5201", "127.0.0.1:11111"), tg("10.0.0.5:5201", "10.0.0.5:11111")}))
	assert.False(t, allLoopback([]srdexperiment.Target{tg("127.0.0.1:5201", "host.example:11111")}))
	assert.False(t, allLoopback(nil))
}

// TestE1LoopbackSkipsNICCounters: with loopback targets and no -iface, no
// snapshot of the default-route NIC is taken (its traffic is not the
// test's), and the counters note says why.
func TestE1LoopbackSkipsNICCounters(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-skip", "matrix,cache", "-imds", "off", "-d", "200ms", "-rtt-d", "1s", "-streams", "2"}, &stderr)
	require.NoError(t, err)
	snapshots := 0
	o.snapshot = func(iface string) (*ethtool.Snapshot, error) {
		snapshots++
		return &ethtool.Snapshot{Interface: iface, Driver: "ena"}, nil
	}
	var stdout bytes.Buffer
	require.Equal(t, 0, execute(context.Background(), o, &stdout, &stderr), stderr.String())
	assert.Zero(t, snapshots, "no NIC snapshot for loopback targets")
	assert.Contains(t, stdout.String(), "ENA counters: - (loopback targets: NIC counters not relevant)")
	assert.NotContains(t, stdout.String(), "ENA counter windows")
}

// TestCacheCompareUnknownLabel: a -cache-compare pair naming no endpoint is
// a usage error before anything runs, not a silently missing ratio.
func TestCacheCompareUnknownLabel(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-skip", "paths,matrix", "-imds", "off",
		"-cache", "N1=127.0.0.1:1,N2=127.0.0.1:2", "-cache-compare", "N1/N2,N1/N9"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), `"N9"`)
	assert.Empty(t, stdout.String(), "nothing ran")

	stderr.Reset()
	code = run(context.Background(), []string{"-skip", "paths,matrix", "-imds", "off", "-cache-compare", "nope/redis"}, &stdout, &stderr)
	assert.Equal(t, 2, code, "the local servers' labels are checked too")
	assert.Contains(t, stderr.String(), `"nope"`)

	o, err := parseFlags([]string{"-cache", "N1=127.0.0.1:1,N2=127.0.0.1:2", "-cache-compare", "N2/N1"}, &stderr)
	require.NoError(t, err)
	require.NoError(t, checkCacheCompare(o))
}

// TestCachePhasesNotRunPrintDash: a phase no probe went through is "-", not
// a measured 0.0 µs.
func TestCachePhasesNotRunPrintDash(t *testing.T) {
	sum := func(us float64) latency.Summary {
		return latency.Summary{Observations: 10, P50: time.Duration(us * 1e3)}
	}
	sec := &CacheSection{Endpoints: []*CacheEndpoint{{
		Label:   "plain",
		Medians: &cachecli.PhaseMedians{TCPUs: 14.3, GetUs: 28.2, TotalUs: 50.7},
		Probe: &cache.ProbeSummary{Probes: 10, Succeeded: 10, Phases: map[cache.Phase]latency.Summary{
			cache.PhaseConnect: sum(14.3), cache.PhaseCommand: sum(28.2), cache.PhaseClose: sum(3),
		}},
	}, {
		Label:   "tls",
		Medians: &cachecli.PhaseMedians{DNSUs: 0.4, TCPUs: 45.6, TLSUs: 1043.5, AuthUs: 153.1, GetUs: 25.6, TotalUs: 1316.9},
		Probe: &cache.ProbeSummary{Probes: 10, Succeeded: 10, Phases: map[cache.Phase]latency.Summary{
			cache.PhaseDNS: sum(0.4), cache.PhaseConnect: sum(45.6), cache.PhaseTLS: sum(1043.5), cache.PhaseAuth: sum(153.1), cache.PhaseCommand: sum(25.6),
		}},
	}}}
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, sec))
	var plain, tls string
	for _, l := range strings.Split(b.String(), "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 0 && f[0] == "plain":
			plain = l
		case len(f) > 0 && f[0] == "tls":
			tls = l
		}
	}
	assert.Equal(t, []string{"plain", "10", "0", "-", "14.3", "-", "-", "-", "28.2", "50.7", "none"}, strings.Fields(plain))
	assert.Equal(t, []string{"tls", "10", "0", "0.4", "45.6", "1043.5", "153.1", "-", "25.6", "1316.9", "none"}, strings.Fields(tls))
	assert.NotContains(t, b.String(), " 0.0 ")
}

func TestParseRateErrorNamesEverySuffix(t *testing.T) {
	v, err := parseRate("2T")
	require.NoError(t, err)
	assert.Equal(t, 2e12, v)
	_, err = parseRate("5X")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "K, M, G or T")
	assert.Contains(t, err.Error(), `"5X"`)
}

// TestMatrixJitterNeverReadsZero: a UDP row's sub-microsecond jitter (the
// kernel's arrival times resolve it on loopback) keeps two significant
// digits instead of printing 0.000; a TCP row has none.
func TestMatrixJitterNeverReadsZero(t *testing.T) {
	sec := &MatrixSection{Target: "127.0.0.1:1", LimitBitsPerSecond: 5e9, Rows: []MatrixRow{
		{Scenario: "UDP 1G", Direction: "upload", Protocol: "udp", JitterMs: 0.00042},
		{Scenario: "UDP 5G", Direction: "upload", Protocol: "udp", JitterMs: 0.0123},
		{Scenario: "TCP 1 stream", Direction: "upload", Protocol: "tcp", Retransmits: -1},
	}}
	var b bytes.Buffer
	require.NoError(t, writeMatrixText(&b, sec))
	lines := strings.Split(b.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 5, b.String())
	assert.Contains(t, lines[2], "0.00042", b.String())
	assert.Contains(t, lines[3], "0.012", b.String())
	assert.NotContains(t, b.String(), "0.000 ", "a measured jitter never reads 0.000")
}
