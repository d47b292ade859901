package srdexperiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture reads one of ethtool's `ethtool -S` fixtures as a snapshot of
// eth0 taken at a fixed time plus at.
func fixture(t testing.TB, name string, at time.Duration) *ethtool.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "ethtool", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	s.Interface = "eth0"
	s.Time = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).Add(at)
	return s
}

// e1Fakes replays the field study: published throughput and RTT per target,
// and the ENA snapshots with its SRD counter deltas.
func e1Fakes(t *testing.T) *Config {
	// The study's snapshots were taken before and after each target; the
	// snapshots between the phases are interpolated at 15/50 s (1 flow)
	// and 35/50 s (8 streams).
	var snaps []*ethtool.Snapshot
	for i, target := range []string{"same-az", "cross-az"} {
		b := fixture(t, "ena-2.17-"+target+"-before.txt", time.Duration(60*i)*time.Second)
		a := fixture(t, "ena-2.17-"+target+"-after.txt", time.Duration(60*i+50)*time.Second)
		snaps = append(snaps, b, between(b, a, 0.3), between(b, a, 0.7), a)
	}
	replay := Replay(snaps...)
	rows := map[string]struct {
		one, many float64
		rtt       latency.Summary
	}{
		"10.0.1.20": {24.3e9, 99.8e9, latency.Summary{Observations: 278105, P50: time.Duration(52.2 * 1e3), P99: time.Duration(56.7 * 1e3), P999: time.Duration(59.5 * 1e3)}},
		"10.0.2.30": {12.6e9, 86.8e9, latency.Summary{Observations: 25000, P50: time.Duration(590.4 * 1e3), P99: time.Duration(677.4 * 1e3), P999: time.Duration(702.0 * 1e3)}},
	}
	return &Config{
		Interface: "eth0",
		Throughput: func(_ context.Context, addr string, streams int, d time.Duration) (float64, error) {
			host, _, _ := net.SplitHostPort(addr)
			if streams == 1 {
				assert.Equal(t, 15*time.Second, d)
				return rows[host].one, nil
			}
			assert.Equal(t, 8, streams)
			assert.Equal(t, 20*time.Second, d)
			return rows[host].many, nil
		},
		RTT: func(_ context.Context, addr string, d time.Duration) (latency.Summary, error) {
			host, _, _ := net.SplitHostPort(addr)
			assert.Equal(t, 15*time.Second, d)
			return rows[host].rtt, nil
		},
		Snapshot: func(iface string) (*ethtool.Snapshot, error) {
			require.Equal(t, "eth0", iface)
			s, err := replay(iface)
			require.NoError(t, err, "one snapshot before each target and one after each phase")
			return s, nil
		},
	}
}

// between interpolates the counters of two snapshots at frac of the window
// (gauges take the later value from half-way).
func between(b, a *ethtool.Snapshot, frac float64) *ethtool.Snapshot {
	out := a.Clone()
	out.Time = b.Time.Add(time.Duration(frac * float64(a.Time.Sub(b.Time))))
	for i, st := range out.Stats {
		v0, _ := b.Stats.Get(st.Name)
		switch {
		case ethtool.IsGauge(st.Name):
			if frac < 0.5 {
				out.Stats[i].Value = v0
			}
		case st.Value >= v0:
			out.Stats[i].Value = v0 + uint64(frac*float64(st.Value-v0))
		}
	}
	return out
}

var e1Targets = []Target{
	{Name: "same AZ", ThroughputAddr: "10.0.1.20:5201", PingPongAddr: "10.0.1.20:11111"},
	{Name: "cross AZ", ThroughputAddr: "10.0.2.30:5201", PingPongAddr: "10.0.2.30:11111"},
}

func TestExperimentE1Table(t *testing.T) {
	cfg := e1Fakes(t)
	var phases []string
	cfg.OnPhase = func(target, phase string) { phases = append(phases, target+"/"+phase) }
	res, err := Run(context.Background(), e1Targets, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"same AZ/1-flow", "same AZ/n-stream", "same AZ/rtt", "cross AZ/1-flow", "cross AZ/n-stream", "cross AZ/rtt"}, phases)
	require.Len(t, res.Targets, 2)
	same := res.Targets[0]
	assert.Equal(t, 24.3e9, same.SingleFlowBitsPerSecond)
	assert.Equal(t, 99.8e9, same.MultiStreamBitsPerSecond)
	assert.Equal(t, 52.2, float64(same.RTT.P50)/1e3)
	assert.Equal(t, uint64(28195047), same.SRD.TxPktsDelta)
	assert.Equal(t, uint64(28195063), same.SRD.EligibleTxPktsDelta)
	assert.Equal(t, srd.VerdictCarried, same.SRD.Verdict)
	assert.Equal(t, srd.ExpressMode(3), same.SRD.Mode)
	assert.Equal(t, uint64(24534321), res.Targets[1].SRD.TxPktsDelta)

	var buf bytes.Buffer
	require.NoError(t, res.WriteTable(&buf))
	golden := filepath.Join("testdata", "e1-table.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String())

	b, err := json.Marshal(res)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	row := back["targets"].([]any)[0].(map[string]any)
	assert.Equal(t, "same AZ", row["name"])
	assert.Equal(t, 24.3e9, row["single_flow_bits_per_second"])
	assert.Equal(t, 52.2, row["rtt"].(map[string]any)["p50_us"])
	assert.Equal(t, 28195047.0, row["srd"].(map[string]any)["tx_pkts_delta"])
}

func TestExperimentFailuresAndCancel(t *testing.T) {
	boom := errors.New("connection refused")
	cfg := &Config{
		SingleFlowDuration: time.Millisecond, MultiStreamDuration: time.Millisecond, RTTDuration: time.Millisecond, Streams: 2,
		Throughput: func(_ context.Context, addr string, streams int, _ time.Duration) (float64, error) {
			if strings.HasPrefix(addr, "bad") {
				return 0, boom
			}
			return float64(streams) * 1e9, nil
		},
		RTT: func(context.Context, string, time.Duration) (latency.Summary, error) {
			return latency.Summary{P50: time.Duration(10 * 1e3)}, nil
		},
	}
	res, err := Run(context.Background(), []Target{{Name: "a", ThroughputAddr: "bad:1"}, {Name: "b", ThroughputAddr: "good:1"}}, cfg)
	require.NoError(t, err)
	assert.Equal(t, "1-flow TCP: connection refused", res.Targets[0].Error)
	assert.Equal(t, 10.0, float64(res.Targets[0].RTT.P50)/1e3, "the other runs of a failing target still run")
	assert.Empty(t, res.Targets[1].Error)
	assert.Equal(t, 2e9, res.Targets[1].MultiStreamBitsPerSecond)
	assert.Equal(t, srd.VerdictNoStatistics, res.Targets[1].SRD.Verdict)
	assert.Equal(t, "no interface was given to snapshot", res.Targets[1].SRD.Reason)

	ctx, cancel := context.WithCancel(context.Background())
	cfg.OnPhase = func(target, phase string) {
		if phase == "n-stream" {
			cancel()
		}
	}
	res, err = Run(ctx, []Target{{Name: "a", ThroughputAddr: "good:1"}, {Name: "b"}}, cfg)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, res.Targets, 1)

	_, err = Run(context.Background(), nil, nil)
	assert.Error(t, err)
	_, err = Run(context.Background(), e1Targets, &Config{Streams: -1})
	assert.Error(t, err)

	cfg.OnPhase = nil
	cfg.Interface = "eth0"
	cfg.Snapshot = func(string) (*ethtool.Snapshot, error) {
		return nil, fmt.Errorf("ethtool: eth0: %w", ethtool.ErrNoInterface)
	}
	_, err = Run(context.Background(), e1Targets, cfg)
	assert.ErrorIs(t, err, ethtool.ErrNoInterface)
	assert.ErrorContains(t, err, "srdexperiment: snapshot")
}

// TestExperimentLoopback runs the real pieces: throughput.Run against an
// in-process throughput.Serve, latency.PingPong against latencytest's
// server, and the live ethtool snapshot of lo (which has no statistics).
// It asserts what the experiment did with what they measured, not how much
// they measured: a loaded machine can hold loopback data back for a whole
// 300 ms phase (docs/testing.md), so a rate may be 0.
func TestExperimentLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	srv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	pp := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})

	// What the real runs returned, by phase.
	var mu sync.Mutex
	rates := map[int]float64{}
	var rtt latency.Summary
	var rttErr error
	cfg := &Config{
		SingleFlowDuration: 300 * time.Millisecond, MultiStreamDuration: 300 * time.Millisecond, Streams: 2,
		RTTDuration: 700 * time.Millisecond,
		Throughput: func(ctx context.Context, addr string, streams int, d time.Duration) (float64, error) {
			bps, err := runThroughput(ctx, addr, streams, d)
			assert.NoError(t, err, "%d streams into the in-process server", streams)
			mu.Lock()
			rates[streams] = bps
			mu.Unlock()
			return bps, err
		},
		RTT: func(ctx context.Context, addr string, d time.Duration) (latency.Summary, error) {
			s, err := runRTT(ctx, addr, d)
			mu.Lock()
			rtt, rttErr = s, err
			mu.Unlock()
			return s, err
		},
	}
	if runtime.GOOS == "linux" {
		cfg.Interface = "lo"
	}
	res, err := Run(ctx, []Target{{Name: "loopback", ThroughputAddr: ln.Addr().String(), PingPongAddr: pp.Addr}}, cfg)
	require.NoError(t, err, "the throughput phases ran")
	row := res.Targets[0]
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, rates, 2, "both throughput phases ran, with 1 and 2 streams")
	assert.Equal(t, rates[1], row.SingleFlowBitsPerSecond, "the row holds what the 1-flow run measured")
	assert.Equal(t, rates[2], row.MultiStreamBitsPerSecond, "the row holds what the 2-stream run measured")
	assert.Equal(t, rtt, row.RTT, "the row holds what the ping-pong run measured")
	if rttErr != nil {
		assert.Equal(t, "UDP ping-pong: "+rttErr.Error(), row.Error)
	} else {
		assert.Empty(t, row.Error)
	}
	assert.GreaterOrEqual(t, row.RTT.P999, row.RTT.P50)
	require.Len(t, row.Windows, 3, "one counter window a phase")
	assert.Equal(t, srd.VerdictNoStatistics, row.SRD.Verdict)
	var buf bytes.Buffer
	require.NoError(t, res.WriteTable(&buf))
	assert.Contains(t, buf.String(), "loopback")
}

// TestExperimentCancelEveryPhase cancels a real experiment (throughput.Run
// against an in-process throughput.Serve, latency.PingPong against
// latencytest's server) 150 ms into each phase, whose run would last a
// minute, and checks that the cancel ended it (the timer fired, the phase
// did not run out) with the partial row and ctx.Err(). The 10 s bound is a
// liveness bound; the 100 ms the convention promises is not a unit test's
// to assert on a loaded machine (docs/testing.md).
func TestExperimentCancelEveryPhase(t *testing.T) {
	sctx, stopServer := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	srv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	go func() { served <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		stopServer()
		<-served
	})
	pp := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	targets := []Target{
		{Name: "a", ThroughputAddr: ln.Addr().String(), PingPongAddr: pp.Addr},
		{Name: "b", ThroughputAddr: ln.Addr().String(), PingPongAddr: pp.Addr},
	}
	for _, phase := range []string{"1-flow", "n-stream", "rtt"} {
		t.Run(phase, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cancelled time.Time
			var timer *time.Timer
			// The phases before the cancelled one are short; the cancelled
			// one would run for a minute.
			long := map[bool]time.Duration{true: time.Minute, false: 300 * time.Millisecond}
			// What each finished throughput phase measured, by stream count:
			// a loaded machine can stall loopback data for a whole 300 ms
			// phase, so the figure itself may be 0; the row must keep it.
			var mu sync.Mutex
			measured := map[int]float64{}
			cfg := &Config{
				SingleFlowDuration: long[phase == "1-flow"], MultiStreamDuration: long[phase == "n-stream"], Streams: 2,
				RTTDuration: long[phase == "rtt"],
				Throughput: func(ctx context.Context, addr string, streams int, d time.Duration) (float64, error) {
					bps, err := runThroughput(ctx, addr, streams, d)
					if err == nil {
						mu.Lock()
						measured[streams] = bps
						mu.Unlock()
					}
					return bps, err
				},
				OnPhase: func(target, p string) {
					if p != phase {
						return
					}
					timer = time.AfterFunc(150*time.Millisecond, func() { cancelled = time.Now(); cancel() })
				},
			}
			res, err := Run(ctx, targets, cfg)
			returned := time.Now()
			require.NotNil(t, timer, "the phase started")
			require.False(t, timer.Stop(), "the experiment ended through the cancel")
			elapsed := returned.Sub(cancelled)
			t.Logf("returned %v after cancel", elapsed)
			assert.Less(t, elapsed, 10*time.Second, "the cancel, not the minute-long phase, ended it")
			require.ErrorIs(t, err, context.Canceled)
			assert.ErrorContains(t, err, "srdexperiment: "+phase)
			require.NotNil(t, res)
			require.Len(t, res.Targets, 1, "the second target never ran")
			row := res.Targets[0]
			assert.Empty(t, row.Error, "a cancel is not a failed run")
			switch phase {
			case "1-flow":
				assert.Zero(t, row.MultiStreamBitsPerSecond)
			case "n-stream":
				require.Contains(t, measured, 1, "the 1-flow phase finished")
				assert.Equal(t, measured[1], row.SingleFlowBitsPerSecond, "the finished phase is kept")
				assert.Zero(t, row.RTT.Observations)
			case "rtt":
				require.Contains(t, measured, 1, "the 1-flow phase finished")
				require.Contains(t, measured, 2, "the n-stream phase finished")
				assert.Equal(t, measured[1], row.SingleFlowBitsPerSecond)
				assert.Equal(t, measured[2], row.MultiStreamBitsPerSecond)
			}
			assert.Equal(t, srd.VerdictNoStatistics, row.SRD.Verdict, "the window's coverage is still computed")
		})
	}
}
