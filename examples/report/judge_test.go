package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitedBy(t *testing.T) {
	tcp := func(recv, cpu float64, streams int, retr int64) *MatrixRow {
		r := &MatrixRow{Protocol: "tcp", Streams: streams, ReceivedBitsPerSecond: recv, SenderCPUPercent: cpu, Retransmits: retr}
		r.PercentOfLimit = 100 * recv / 5e9
		return r
	}
	for _, c := range []struct {
		row        *MatrixRow
		by, detail string
	}{
		{tcp(4.7e9, 30, 1, 0), "limit", "94% of it"},
		{tcp(2e9, 95, 1, 3), "generator CPU", "95% of 1 core(s)"},
		{tcp(2e9, 150, 4, 0), "", ""},                               // 4 streams on 2 CPUs: 150% is not 2 full cores
		{tcp(2e9, 185, 4, 0), "generator CPU", "185% of 2 core(s)"}, // it is at 185%
		{tcp(2e9, 20, 1, 7), "", ""},                                // a retransmit count alone never decides (TestTCPLimitedBy)
		{tcp(2e9, 20, 1, -1), "", ""},
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 5e9, SentBitsPerSecond: 0.4e9, ReceivedBitsPerSecond: 0.4e9, GeneratorLimited: true}, "generator", "sent 0.40 of 5.00 Gbit/s"},
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 1e9, SentBitsPerSecond: 1e9, ReceivedBitsPerSecond: 0.6e9, LostPercent: 40}, "loss", "40.0% lost: 0.60 of 1.00 Gbit/s delivered"},
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 1e9, SentBitsPerSecond: 1e9, ReceivedBitsPerSecond: 0.999e9, LostPercent: 0.1}, "", ""},
		// The sending host's queue: dropped (keep-rate), or held back.
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 6e9, SentBitsPerSecond: 4.2e9, ReceivedBitsPerSecond: 4.2e9, GeneratorLimited: true, LocalDrops: 90000},
			"sender's queue", "90000 datagrams dropped by the sending host; sent 4.20, delivered 4.20 of 6.00 Gbit/s"},
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 6e9, SentBitsPerSecond: 4.6e9, ReceivedBitsPerSecond: 4.6e9, GeneratorLimited: true, LocalRetries: 500},
			"sender's queue", "the sending host's queue held it to 4.60 of 6.00 Gbit/s; delivered 4.60"},
		{&MatrixRow{Protocol: "udp", TargetBitsPerSecond: 1e9, SentBitsPerSecond: 1e9, ReceivedBitsPerSecond: 1e9, LocalRetries: 3}, "", ""},
	} {
		by, detail := limitedBy(c.row, 5e9, 2)
		assert.Equal(t, c.by, by, "%+v", c.row)
		assert.Equal(t, c.detail, detail, "%+v", c.row)
	}
}

func TestFlagsRTTModeAndPaths(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseFlags([]string{"-rtt-mode", "busy"}, &stderr)
	assert.ErrorContains(t, err, `-rtt-mode: "busy" is not spin or poll`)
	_, err = parseFlags([]string{"-i", "10ms"}, &stderr)
	assert.ErrorContains(t, err, "-i must be at least 100ms")

	o, err := parseFlags([]string{"-paths", "same=10.0.0.5@25G,cross=10.1.0.7@5G,other=10.2.0.1"}, &stderr)
	require.NoError(t, err)
	ts, limits, err := pathTargets(o, &servers{})
	require.NoError(t, err)
	require.Len(t, ts, 3)
	assert.Equal(t, "10.0.0.5:5201", ts[0].ThroughputAddr)
	assert.Equal(t, "10.1.0.7:11111", ts[1].PingPongAddr)
	assert.Equal(t, map[string]float64{"same": 25e9, "cross": 5e9}, limits)
	o.paths = "x=h@fast"
	_, _, err = pathTargets(o, &servers{})
	assert.ErrorContains(t, err, `-paths: x: limit "fast"`)
}

// TestReportPathLimitAndRTTMode measures a path given as name=host@limit
// (servers started by the test on loopback) in poll mode, and checks the
// 1-flow row is judged against that limit.
func TestReportPathLimitAndRTTMode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	tport := ln.Addr().(*net.TCPAddr).Port
	// The ping-pong server must share the host and take the port -lport names.
	pp := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	_, lport, err := net.SplitHostPort(pp.Addr)
	require.NoError(t, err)

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-skip", "matrix,cache", "-imds", "off", "-paths", "lo=127.0.0.1@10G",
		"-tport", itoa(tport), "-lport", lport, "-rtt-mode", "poll", "-d", "300ms", "-rtt-d", "1s", "-streams", "2", "-out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "RTT mode poll (Go's netpoller")
	assert.Regexp(t, `lo\s+[\d.]+\s+[\d.]+ of 10G`, stdout.String())

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep struct {
		Paths struct {
			RTTMode string             `json:"rtt_mode"`
			Limits  map[string]float64 `json:"single_flow_limit_bits_per_second"`
			Targets []struct {
				RTT struct {
					Observations int64 `json:"observations"`
					Dropped      int64 `json:"dropped"`
				} `json:"rtt"`
			} `json:"targets"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, "poll", rep.Paths.RTTMode)
	assert.Equal(t, map[string]float64{"lo": 10e9}, rep.Paths.Limits)
	require.Len(t, rep.Paths.Targets, 1)
	assert.Positive(t, rep.Paths.Targets[0].RTT.Observations+rep.Paths.Targets[0].RTT.Dropped, "a round trip was sent and accounted for")
}

func itoa(n int) string { return strconv.Itoa(n) }
