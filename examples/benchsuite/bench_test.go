package benchsuite

import (
	"fmt"
	"testing"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/throughputtest"
)

// BenchmarkRTT reports UDP and TCP ping-pong round-trip percentiles.
func BenchmarkRTT(b *testing.B) {
	srv := latencytest.NewServer(b, nil)
	b.Run("udp", func(b *testing.B) {
		latencytest.Benchmark(b, srv.Addr, nil)
	})
	b.Run("tcp", func(b *testing.B) {
		latencytest.Benchmark(b, srv.Addr, &latency.PingPongConfig{Network: "tcp"})
	})
}

// BenchmarkTCP reports received bits/s of 1 and 4 TCP streams; one b.N
// iteration is one 1 MiB block, so the B/s column is the throughput.
func BenchmarkTCP(b *testing.B) {
	srv := throughputtest.NewServer(b, nil)
	for _, streams := range []int{1, 4} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			throughputtest.Benchmark(b, srv.Addr, &throughput.Config{Streams: streams})
		})
	}
}

// BenchmarkUDP reports received bits/s and loss at a fixed target rate;
// one b.N iteration is one 1400-byte datagram.
func BenchmarkUDP(b *testing.B) {
	srv := throughputtest.NewServer(b, nil)
	throughputtest.Benchmark(b, srv.Addr, &throughput.Config{UDP: true, Bitrate: 1e9, BlockLen: 1400})
}

// BenchmarkCache reports p50-ns, p99-ns and ops/s of pooled and
// connect-per-operation GET/SET workloads on the lean RESP engine.
func BenchmarkCache(b *testing.B) {
	srv := cachetest.NewServer(b, nil)
	ep := &cache.Endpoint{Addr: srv.Addr}
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		b.Run(string(mode), func(b *testing.B) {
			cachetest.Benchmark(b, ep, &cache.WorkloadConfig{Mode: mode, Workers: 4})
		})
	}
}
