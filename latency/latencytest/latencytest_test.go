package latencytest_test

import (
	"context"
	"flag"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewServerBoth(t *testing.T) {
	s := latencytest.NewServer(t, nil)
	require.NotEmpty(t, s.Addr)
	for _, network := range []string{"udp", "tcp"} {
		res, err := latency.PingPong(context.Background(), s.Addr, &latency.PingPongConfig{Network: network, Count: 20})
		require.NoError(t, err, network)
		assert.Equal(t, int64(20), res.Observations, network)
	}
	assert.Equal(t, int64(40), s.Server.Stats().Replies)
	require.NotNil(t, s.Server.Addr())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
}

func TestNewServerTCPOnly(t *testing.T) {
	s := latencytest.NewServer(t, &latencytest.Config{Network: "tcp", Server: &latency.ServerConfig{MaxConns: 1}})
	res, err := latency.PingPong(context.Background(), s.Addr, &latency.PingPongConfig{Network: "tcp", Count: 5})
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.Observations)
}

func TestNewServerImpair(t *testing.T) {
	var mu sync.Mutex
	var seqs []uint64
	s := latencytest.NewServer(t, &latencytest.Config{Impair: func(seq uint64) (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		seqs = append(seqs, seq)
		switch len(seqs) {
		case 2, 4:
			return 0, true
		case 6:
			return time.Hour, false // still held when the server closes
		}
		return 0, false
	}})
	// ReadTimeout 1 s: a loaded machine's stall is not taken for a drop.
	res, err := latency.PingPong(context.Background(), s.Addr, &latency.PingPongConfig{Count: 6, ReadTimeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Observations)
	assert.Equal(t, int64(3), res.Dropped)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seqs, 6, "one call per reply, warm-up messages get none")
	for i := 1; i < len(seqs); i++ {
		assert.Equal(t, seqs[i-1]+1, seqs[i], "the replies' sequence numbers, in order")
	}
	res, err = latency.PingPong(context.Background(), s.Addr, &latency.PingPongConfig{Network: "tcp", Count: 6, ReadTimeout: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, int64(6), res.Observations, "TCP is never impaired")
	done := make(chan struct{})
	go func() { _ = s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a reply held back an hour")
	}
}

func BenchmarkLoopbackUDP(b *testing.B) {
	s := latencytest.NewServer(b, &latencytest.Config{Network: "udp"})
	latencytest.Benchmark(b, s.Addr, nil)
}

func BenchmarkLoopbackTCP(b *testing.B) {
	s := latencytest.NewServer(b, &latencytest.Config{Network: "tcp"})
	latencytest.Benchmark(b, s.Addr, &latency.PingPongConfig{Network: "tcp"})
}

// The metrics Benchmark reports, run as `go test -bench` runs it: the
// percentiles and one throughput figure in base units benchstat scales,
// ns/op 0, and nothing that is always zero.
func TestBenchmarkMetrics(t *testing.T) {
	s := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	bt := flag.Lookup("test.benchtime")
	require.NotNil(t, bt)
	old := bt.Value.String()
	require.NoError(t, bt.Value.Set("300x"))
	defer func() { _ = bt.Value.Set(old) }()
	r := testing.Benchmark(func(b *testing.B) { latencytest.Benchmark(b, s.Addr, nil) })
	require.Equal(t, 300, r.N)
	assert.ElementsMatch(t, []string{"p50-ns", "p99-ns", "p999-ns", "ops/s", "ns/op"}, slices.Collect(maps.Keys(r.Extra)))
	assert.Zero(t, r.NsPerOp(), "ns/op means nothing here")
	assert.Positive(t, r.Extra["p50-ns"])
	assert.LessOrEqual(t, r.Extra["p50-ns"], r.Extra["p99-ns"])
	assert.LessOrEqual(t, r.Extra["p99-ns"], r.Extra["p999-ns"])
	assert.Positive(t, r.Extra["ops/s"])
	assert.Contains(t, r.String(), "p50-ns")
	assert.NotContains(t, r.String(), "Gbps")
}

// runBench runs Benchmark for 200 round trips as `go test -bench` would.
func runBench(t *testing.T, target string, cfg *latency.PingPongConfig) testing.BenchmarkResult {
	t.Helper()
	bt := flag.Lookup("test.benchtime")
	require.NotNil(t, bt)
	old := bt.Value.String()
	require.NoError(t, bt.Value.Set("200x"))
	defer func() { _ = bt.Value.Set(old) }()
	return testing.Benchmark(func(b *testing.B) { latencytest.Benchmark(b, target, cfg) })
}

// An empty target starts an in-process server, as throughputtest's does
// (issue 39: it failed with "missing address").
func TestBenchmarkInProcessServer(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		r := runBench(t, "", &latency.PingPongConfig{Network: network})
		require.Equal(t, 200, r.N, network)
		assert.Positive(t, r.Extra["p50-ns"], network)
		assert.Positive(t, r.Extra["ops/s"], network)
	}
}

// With KernelStamps the kernel view's percentiles are reported beside the
// application's.
func TestBenchmarkKernelStamps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel view is linux's")
	}
	r := runBench(t, "", &latency.PingPongConfig{KernelStamps: true})
	assert.ElementsMatch(t, []string{"p50-ns", "p99-ns", "p999-ns", "kernel-p50-ns", "kernel-p99-ns", "ops/s", "ns/op"},
		slices.Collect(maps.Keys(r.Extra)))
	assert.Positive(t, r.Extra["kernel-p50-ns"])
	assert.LessOrEqual(t, r.Extra["kernel-p50-ns"], r.Extra["kernel-p99-ns"])
	assert.LessOrEqual(t, r.Extra["kernel-p50-ns"], r.Extra["p99-ns"], "the kernel view is inside the application's")
}
