package throughputtest_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/throughputtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServer(t *testing.T) {
	srv := throughputtest.NewServer(t, &throughputtest.Config{Server: &throughput.ServerConfig{MaxTests: 2}})
	res, err := throughput.Run(context.Background(), srv.Addr, &throughput.Config{Duration: 300 * time.Millisecond})
	require.NoError(t, err)
	got := <-srv.Results()
	assert.Equal(t, "server", got.Role)
	assert.Equal(t, res.Upload.Received.Bytes, got.Upload.Received.Bytes)
	require.NoError(t, srv.Close())
	_, err = throughput.Run(context.Background(), srv.Addr, &throughput.Config{Duration: 100 * time.Millisecond, ConnectTimeout: time.Second})
	assert.Error(t, err, "a closed server refuses tests")
	assert.NoError(t, srv.Close(), "Close is idempotent")
	assert.Error(t, (&throughputtest.Server{}).Close(), "a zero Server says so")
}

// TestBenchmark runs Benchmark as `go test -bench` would and checks that
// b.N counted blocks (the test moved b.N blocks of the block length) and
// that the metrics are one throughput figure, the test's own received
// rate, with ns/op suppressed, no B/s from the timer, and losses only when
// there were some: at -benchtime 1x as at the default.
func TestBenchmark(t *testing.T) {
	for _, c := range []struct {
		name      string
		benchtime string // -test.benchtime; "" keeps the default
		n         int    // the b.N it gives, 0 when the framework sizes it
		cfg       throughput.Config
	}{
		{"tcp 1x", "1x", 1, throughput.Config{BlockLen: 64 << 10, Interval: -1}},
		{"tcp sized", "", 0, throughput.Config{BlockLen: 64 << 10, Interval: -1}},
		{"udp 1x", "1x", 1, throughput.Config{UDP: true, Bitrate: 100e6, BlockLen: 1400, Interval: -1}},
		{"udp 200x", "200x", 200, throughput.Config{UDP: true, Bitrate: 100e6, BlockLen: 1400, Interval: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.benchtime != "" {
				setBenchtime(t, c.benchtime)
			}
			var res *throughput.Result
			var n int
			r := testing.Benchmark(func(b *testing.B) {
				n = b.N
				cfg := c.cfg
				res = throughputtest.Benchmark(b, "", &cfg)
			})
			require.NotNil(t, res)
			if c.n > 0 {
				assert.Equal(t, c.n, n)
			}
			assert.Equal(t, int64(n), res.Config.Blocks)
			assert.GreaterOrEqual(t, res.Total().Sent.Bytes, int64(n)*int64(c.cfg.BlockLen), "every block was sent")
			assertMetrics(t, r, res)
		})
	}
}

// setBenchtime sets -test.benchtime, which testing.Benchmark reads, for
// the rest of t, as `go test -benchtime` would.
func setBenchtime(t *testing.T, v string) {
	t.Helper()
	f := flag.Lookup("test.benchtime")
	require.NotNil(t, f, "the test binary's benchtime flag")
	old := f.Value.String()
	require.NoError(t, f.Value.Set(v))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// assertMetrics checks r reports exactly the metrics Benchmark documents
// for res.
func assertMetrics(t *testing.T, r testing.BenchmarkResult, res *throughput.Result) {
	t.Helper()
	total := res.Total()
	want := map[string]float64{"ns/op": 0, "bits/s": total.Received.BitsPerSecond}
	if total.Sent.Retransmits >= 0 && !res.Config.UDP {
		want["retransmits/op"] = float64(total.Sent.Retransmits) / float64(res.Config.Blocks)
	}
	if res.Config.UDP {
		want["lost-%"] = total.Received.LostPercent
	}
	assert.Equal(t, want, r.Extra, "one throughput figure, the test's own; losses in every run, zeros included")
	if !res.Config.UDP { // loopback UDP may lose a starved receiver's datagrams
		assert.Positive(t, r.Extra["bits/s"], "data was received")
	}
	assert.Zero(t, r.Bytes, "no SetBytes: no B/s column that includes set-up")
	out := r.String()
	assert.NotContains(t, out, "ns/op")
	assert.NotContains(t, out, "MB/s")
	assert.Contains(t, out, "bits/s")
}

func BenchmarkLoopbackTCP(b *testing.B) {
	throughputtest.Benchmark(b, "", &throughput.Config{Interval: -1})
}

func BenchmarkLoopbackUDP(b *testing.B) {
	throughputtest.Benchmark(b, "", &throughput.Config{UDP: true, Bitrate: 100e6, BlockLen: 1400, Interval: -1})
}

// An in-process server for a test: run the client against srv.Addr.
func ExampleNewServer() {
	_ = func(t *testing.T) {
		srv := throughputtest.NewServer(t, nil) // stopped when the test ends
		res, err := throughput.Run(context.Background(), srv.Addr, &throughput.Config{Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Upload.Received.BitsPerSecond)
	}
}

// Benchmark in a user's benchmark: one b.N iteration is one block (1 MiB
// for TCP by default); the one throughput figure is bits/s, the test's own
// received rate, and ns/op is 0.
func ExampleBenchmark() {
	_ = func(b *testing.B) {
		throughputtest.Benchmark(b, "", &throughput.Config{Streams: 4})
	}
}
