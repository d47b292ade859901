package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "10": 10, "128K": 128 << 10, "1.5M": 3 << 19, "2G": 2 << 30} {
		got, err := parseSize(in, 1024)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	got, err := parseSize("5M", 1000)
	require.NoError(t, err)
	assert.Equal(t, int64(5e6), got)
	_, err = parseSize("x", 1000)
	assert.Error(t, err)
}

func TestFlags(t *testing.T) {
	o, err := parseArgs([]string{"-c", "h", "-p", "6000", "-t", "3", "-P", "4", "-R", "-u", "-b", "0", "-l", "1400", "-w", "1M", "-O", "1", "-i", "0.5", "-J", "--get-server-output"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "h", o.host)
	assert.Equal(t, 6000, o.port)
	assert.Equal(t, 3*time.Second, o.cfg.Duration)
	assert.Equal(t, 4, o.cfg.Streams)
	assert.True(t, o.cfg.Reverse && o.cfg.UDP && o.jsonOut && o.cfg.GetServerOutput)
	assert.Less(t, o.cfg.Bitrate, 0.0, "-b 0 is unlimited")
	assert.Equal(t, 1400, o.cfg.BlockLen)
	assert.Equal(t, 1<<20, o.cfg.Window)
	assert.Equal(t, 500*time.Millisecond, o.cfg.Interval)
	o, err = parseArgs([]string{"--bidir", "-n", "10M", "-k", "5"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, o.cfg.Bidir)
	assert.Equal(t, int64(10<<20), o.cfg.Bytes)
	assert.Equal(t, time.Duration(0), o.cfg.Duration)
	_, err = parseArgs([]string{"-s", "-c", "x"}, &bytes.Buffer{})
	assert.Error(t, err)
}

func TestInProcessText(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-t", "1", "-i", "0.5", "-P", "2", "--rtt", "local"}, &out))
	s := out.String()
	assert.Contains(t, s, "Connecting to host 127.0.0.1")
	assert.Contains(t, s, "[SUM]")
	assert.Contains(t, s, "sender")
	assert.Contains(t, s, "receiver")
	assert.Contains(t, s, "iperf Done.")
	assert.Contains(t, s, "RTT under load (udp,")
	assert.GreaterOrEqual(t, strings.Count(s, "sec "), 6)
}

func TestInProcessJSON(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-t", "1", "-u", "-b", "10M", "-J"}, &out))
	var doc struct {
		End struct {
			Sum struct {
				JitterMs    *float64 `json:"jitter_ms"`
				LostPackets *int64   `json:"lost_packets"`
				LostPercent *float64 `json:"lost_percent"`
				Packets     int64    `json:"packets"`
			} `json:"sum"`
			CPU map[string]float64 `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	assert.NotNil(t, doc.End.Sum.JitterMs)
	assert.NotNil(t, doc.End.Sum.LostPercent)
	assert.Greater(t, doc.End.Sum.Packets, int64(800))
	assert.Contains(t, doc.End.CPU, "remote_total")
}

func TestServerMode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var sout peertest.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-s", "-p", strconv.Itoa(port)}, &sout) }()
	var cout bytes.Buffer
	var cerr error
	for i := 0; i < 50; i++ {
		cout.Reset()
		if cerr = run(context.Background(), []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "0.5", "--bidir"}, &cout); cerr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, cerr)
	assert.Contains(t, cout.String(), "receiver")
	assert.Contains(t, cout.String(), "Server-side sender statistics", "bidir shows the server's TCP_INFO")
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, sout.String(), "Accepted connection from 127.0.0.1")
}
