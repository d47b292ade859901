package throughputtest_test

import (
	"context"
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
// b.N counted blocks: the test moved b.N blocks of the block length.
func TestBenchmark(t *testing.T) {
	var res *throughput.Result
	var n int
	r := testing.Benchmark(func(b *testing.B) {
		n = b.N
		res = throughputtest.Benchmark(b, "", &throughput.Config{BlockLen: 64 << 10, Interval: -1})
	})
	require.NotNil(t, res)
	assert.Equal(t, int64(64<<10), r.Bytes, "SetBytes is the block length")
	assert.Equal(t, int64(n), res.Config.Blocks)
	assert.GreaterOrEqual(t, res.Total().Sent.Bytes, int64(n)*64<<10, "every block was sent")
	assert.Positive(t, r.Extra["bits/s"])
	assert.Contains(t, r.Extra, "retransmits/op")
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
// for TCP by default), so B/s is the throughput; bits/s is reported too.
func ExampleBenchmark() {
	_ = func(b *testing.B) {
		throughputtest.Benchmark(b, "", &throughput.Config{Streams: 4})
	}
}
