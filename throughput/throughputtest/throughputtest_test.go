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
	srv := throughputtest.NewServer(t, &throughput.ServerConfig{MaxTests: 2})
	res, err := throughput.Run(context.Background(), srv.Addr, &throughput.Config{Duration: 300 * time.Millisecond})
	require.NoError(t, err)
	got := <-srv.Results()
	assert.Equal(t, "server", got.Role)
	assert.Equal(t, res.Upload.Received.Bytes, got.Upload.Received.Bytes)
	require.NoError(t, srv.Close())
	_, err = throughput.Run(context.Background(), srv.Addr, &throughput.Config{Duration: 100 * time.Millisecond, ConnectTimeout: time.Second})
	assert.Error(t, err, "a closed server refuses tests")
}

func BenchmarkLoopbackTCP(b *testing.B) {
	throughputtest.Bench(b, "", &throughput.Config{Duration: 500 * time.Millisecond, Interval: -1})
}

func BenchmarkLoopbackUDP(b *testing.B) {
	throughputtest.Bench(b, "", &throughput.Config{UDP: true, Bitrate: 100e6, BlockLen: 1400, Duration: 500 * time.Millisecond, Interval: -1})
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

// Bench in a user's benchmark reports bits/s with b.ReportMetric.
func ExampleBench() {
	_ = func(b *testing.B) {
		throughputtest.Bench(b, "", &throughput.Config{Streams: 4, Duration: time.Second})
	}
}
