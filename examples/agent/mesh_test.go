package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testMeshConfig(m *metrics) meshConfig {
	return meshConfig{
		rttEvery: 10 * time.Millisecond, rttTimeout: 50 * time.Millisecond,
		tputBytes: 100, tputTimeout: 50 * time.Millisecond,
		maxProbes: 4, jitter: 0.1, budget: newByteBudget(1 << 40),
		metrics: m, log: slog.New(slog.DiscardHandler),
	}
}

func TestMeshDownPeerCountsErrorsWithoutStallingOthers(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.maxProbes = 1 // the down peer's probes compete for the only slot
	cfg.probes.rtt = func(ctx context.Context, p peer) (rttResult, error) {
		if p.Host == "down" {
			<-ctx.Done() // a silent peer: only the probe bound ends the wait
			return rttResult{}, ctx.Err()
		}
		return rttResult{samples: []time.Duration{100 * time.Microsecond, 200 * time.Microsecond}, lost: 1}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms := newMesh(ctx, cfg)
	ms.setPeers([]peer{{"up", 1, 2}, {"down", 1, 2}})
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.errs.WithLabelValues("down", "timeout")) >= 3 &&
			testutil.CollectAndCount(m.rtt) == 1 && rttCount(m, "up") >= 6
	}, 10*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, testutil.ToFloat64(m.errs.WithLabelValues("up", "lost")), 3.0)
	assert.Zero(t, testutil.ToFloat64(m.errs.WithLabelValues("up", "timeout")))
	cancel()
	waitOrFail(t, ms.wait, stopBound)
}

func rttCount(m *metrics, p string) uint64 {
	var n uint64
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		mfs, _ := m.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "netperfkit_probe_rtt_seconds" {
				continue
			}
			for _, x := range mf.GetMetric() {
				if x.GetLabel()[0].GetValue() == p {
					n = x.GetHistogram().GetSampleCount()
				}
			}
		}
	}()
	<-ch
	return n
}

// stopBound is how long a mesh may take to stop after its ctx ends before a
// test calls it a hang: a liveness bound, not a speed.
const stopBound = 10 * time.Second

func waitOrFail(t *testing.T, f func(), d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
	}
}

func TestMeshBoundsConcurrencyAndOneThroughputProbePerPeer(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = 0
	cfg.tputEvery = time.Millisecond
	cfg.maxProbes = 2
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	perPeer := map[string]int{}
	var probes, overlap atomic.Int64
	cfg.probes.tput = func(ctx context.Context, p peer, maxBytes int64) (tputResult, error) {
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		perPeer[p.Host]++
		if perPeer[p.Host] > 1 {
			overlap.Add(1)
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		perPeer[p.Host]--
		mu.Unlock()
		probes.Add(1)
		return tputResult{bitsPerSecond: 1e9, sentBytes: maxBytes}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms := newMesh(ctx, cfg)
	ms.setPeers([]peer{{"a", 1, 2}, {"b", 1, 2}, {"c", 1, 2}, {"d", 1, 2}})
	require.Eventually(t, func() bool { return probes.Load() >= 40 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	waitOrFail(t, ms.wait, stopBound)
	mu.Lock()
	defer mu.Unlock()
	assert.LessOrEqual(t, maxInFlight, 2)
	assert.Zero(t, overlap.Load(), "a peer never has two throughput probes at once")
	assert.Equal(t, 1e9, testutil.ToFloat64(m.tput.WithLabelValues("a")))
}

func TestMeshThroughputBudgetSkipsProbes(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = 0
	cfg.tputEvery = time.Millisecond
	cfg.budget = newByteBudget(250) // two probes of 100 bytes, not three
	var probes atomic.Int64
	cfg.probes.tput = func(ctx context.Context, p peer, maxBytes int64) (tputResult, error) {
		probes.Add(1)
		return tputResult{bitsPerSecond: 1, sentBytes: maxBytes}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms := newMesh(ctx, cfg)
	ms.setPeers([]peer{{"a", 1, 2}})
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.skipped.WithLabelValues("a", "budget")) >= 3
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	waitOrFail(t, ms.wait, stopBound)
	assert.Equal(t, int64(2), probes.Load())
	assert.Equal(t, 200.0, testutil.ToFloat64(m.tputBytes.WithLabelValues("a")))
}

func TestMeshThroughputErrorsAreCounted(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = 0
	cfg.tputEvery = time.Millisecond
	cfg.probes.tput = func(ctx context.Context, p peer, maxBytes int64) (tputResult, error) {
		return tputResult{}, errors.New("boom")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms := newMesh(ctx, cfg)
	ms.setPeers([]peer{{"a", 1, 2}})
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.errs.WithLabelValues("a", "other")) >= 2
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	waitOrFail(t, ms.wait, stopBound)
	assert.Equal(t, int64(1<<40), cfg.budget.remaining(), "failed probes that sent nothing cost nothing")
}

func TestMeshSetPeersAddsRemovesAndForgets(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	var started sync.Map
	cfg.probes.rtt = func(ctx context.Context, p peer) (rttResult, error) {
		started.Store(p.Host, true)
		return rttResult{samples: []time.Duration{time.Millisecond}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := newMesh(ctx, cfg)
	ms.setPeers([]peer{{"a", 1, 2}, {"b", 1, 2}})
	require.Eventually(t, func() bool { return rttCount(m, "a") > 0 && rttCount(m, "b") > 0 }, 10*time.Second, 5*time.Millisecond)
	ms.setPeers([]peer{{"a", 1, 2}, {"c", 1, 2}})
	require.Eventually(t, func() bool { return rttCount(m, "c") > 0 }, 10*time.Second, 5*time.Millisecond)
	assert.Zero(t, rttCount(m, "b"), "a removed peer's series are deleted")
	ms.mu.Lock()
	assert.Len(t, ms.workers, 2)
	assert.NotContains(t, ms.workers, "b")
	ms.mu.Unlock()
	cancel()
	waitOrFail(t, ms.wait, stopBound)
}

func TestMeshJitterStaysWithinBounds(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999999} {
		ms := newMesh(context.Background(), meshConfig{jitter: 0.1, rand: func() float64 { return r }})
		d := ms.jittered(10 * time.Second)
		assert.GreaterOrEqual(t, d, 9*time.Second)
		assert.LessOrEqual(t, d, 11*time.Second)
	}
}

func TestProbeErrorKind(t *testing.T) {
	for want, err := range map[string]error{
		"busy":        fmt.Errorf("x: %w", errPeerBusy),
		"timeout":     fmt.Errorf("x: %w", context.DeadlineExceeded),
		"canceled":    context.Canceled,
		"refused":     &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		"unreachable": &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)},
		"dns":         &net.DNSError{Err: "no such host", Name: "nope.invalid"},
		"other":       errors.New("boom"),
	} {
		assert.Equal(t, want, probeErrorKind(err), "%v", err)
	}
	var ne net.Error = &net.DNSError{IsTimeout: true}
	assert.Equal(t, "timeout", probeErrorKind(ne))
}
