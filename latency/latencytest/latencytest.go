// Package latencytest starts in-process sockperf-compatible servers for tests,
// the way net/http/httptest starts HTTP servers, and measures them from
// benchmarks.
package latencytest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

// Config selects what NewServer starts. A nil *Config means a UDP and a TCP
// listener on loopback with the default server limits.
type Config struct {
	// Network is "udp", "tcp", or empty for both.
	Network string
	// Host is the address to listen on. Empty means "127.0.0.1".
	Host string
	// Server sets the server's limits (nil means defaults).
	Server *latency.ServerConfig
	// Impair, when set, makes the UDP listener's path lossy or slow, for
	// tests of clients on a bad path without netem. It is called with the
	// sequence number of every UDP reply, in order and from the server's
	// goroutine, and says whether to drop the reply or how long to hold it
	// back (0: send it at once). A held-back reply is sent from a goroutine
	// of its own, so later replies may overtake it; Close drops those
	// still held. TCP replies, a byte stream, are never impaired.
	Impair func(seq uint64) (delay time.Duration, drop bool)
}

// Server is a running in-process latency.Server.
type Server struct {
	// Addr is the "host:port" the server listens on: UDP and TCP share the
	// port when Config.Network selects both.
	Addr string
	// Server is the underlying server, for its Stats.
	Server *latency.Server

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	mu     sync.Mutex
	err    error // the first failure of a serving goroutine
}

// sharedPortTries bounds the attempts to find a port free for both UDP and
// TCP: another process may hold the UDP port of a fresh TCP one.
const sharedPortTries = 16

// NewServer starts a sockperf-compatible echo server on a free loopback port
// (the same port for UDP and TCP) and stops it when the test ends (or at
// Close), failing tb if it stopped with an error. It fails tb at once if
// the server cannot start. A nil cfg means UDP and TCP on 127.0.0.1 with
// the default limits.
func NewServer(tb testing.TB, cfg *Config) *Server {
	tb.Helper()
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Network != "" && c.Network != "udp" && c.Network != "tcp" {
		tb.Fatalf("latencytest: Config.Network %q is not udp, tcp or empty", c.Network)
	}
	srv, err := latency.NewServer(c.Server)
	if err != nil {
		tb.Fatalf("latencytest: %v", err)
	}
	pc, ln, err := listen(c.Host, c.Network)
	if err != nil {
		tb.Fatalf("latencytest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, cancel: cancel}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	if pc != nil {
		s.Addr = pc.LocalAddr().String()
		if c.Impair != nil {
			pc = newImpairedConn(pc, c.Impair)
		}
		s.wg.Go(func() { s.fail(srv.ServePacket(ctx, pc)) })
	}
	if ln != nil {
		s.Addr = ln.Addr().String()
		s.wg.Go(func() { s.fail(srv.Serve(ctx, ln)) })
	}
	return s
}

// listen opens the UDP socket and the TCP listener network asks for ("" for
// both, on one port) on host.
func listen(host, network string) (net.PacketConn, net.Listener, error) {
	wildcard := net.JoinHostPort(host, "0")
	switch network {
	case "udp":
		pc, err := net.ListenPacket("udp", wildcard)
		return pc, nil, err
	case "tcp":
		ln, err := net.Listen("tcp", wildcard)
		return nil, ln, err
	}
	var lastErr error
	for range sharedPortTries {
		ln, err := net.Listen("tcp", wildcard)
		if err != nil {
			return nil, nil, err
		}
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err == nil {
			return pc, ln, nil
		}
		ln.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("no port free for both UDP and TCP: %w", lastErr)
}

// fail keeps the first error of a serving goroutine other than the
// cancellation Close causes.
func (s *Server) fail(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("latencytest: %w", err)
	}
}

// Close stops the server and waits for its goroutines. It returns the first
// error a serving goroutine stopped with, if any, and the same on every
// later call.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Benchmark measures round trips to target ("host:port"; an in-process
// server when target is "", as NewServer starts it) with
// latency.PingPong: one b.N iteration is one round trip (one ping-pong
// message and its reply). It reports, in units benchstat scales, the
// round-trip percentiles as p50-ns, p99-ns and p999-ns and one throughput
// figure, the round trips completed per second of the run as ops/s; ns/op
// is set to 0, since the benchmark's own time per iteration includes the
// set-up and means nothing here. With cfg.KernelStamps it also reports
// the kernel-to-kernel view's percentiles (PingPongResult.KernelRTT) as
// kernel-p50-ns and kernel-p99-ns, in every run (0 when the kernel gave
// no view, with the reason logged), so that benchstat compares like with
// like. Dropped round trips are logged, not
// reported as a metric (almost always zero, it would only add a table of
// noise to every comparison). With NETPERFKIT_BENCH_HISTOGRAMS set it also writes the
// round trips' histogram, for shard.MergeHistogramLogs. cfg may be nil; its Count is replaced by b.N
// and, unless set, its Duration bound is lifted. Use it from a user's
// benchmark:
//
//	func BenchmarkRTT(b *testing.B) { latencytest.Benchmark(b, addr, nil) }
func Benchmark(b *testing.B, target string, cfg *latency.PingPongConfig) {
	b.Helper()
	var c latency.PingPongConfig
	if cfg != nil {
		c = *cfg
	}
	c.Count = int64(b.N)
	if target == "" {
		target = NewServer(b, nil).Addr
	}
	b.ResetTimer()
	res, err := latency.PingPong(b.Context(), target, &c)
	b.StopTimer()
	if err != nil {
		b.Fatalf("latencytest: %v", err)
	}
	if res.Dropped > 0 {
		b.Logf("latencytest: %d of %d round trips dropped", res.Dropped, b.N)
	}
	b.ReportMetric(float64(res.P50), "p50-ns")
	b.ReportMetric(float64(res.P99), "p99-ns")
	b.ReportMetric(float64(res.P999), "p999-ns")
	if c.KernelStamps {
		var k latency.Summary
		if res.KernelRTT != nil {
			k = *res.KernelRTT
		} else {
			b.Logf("latencytest: no kernel view: %s", res.NoKernelStamps)
		}
		b.ReportMetric(float64(k.P50), "kernel-p50-ns")
		b.ReportMetric(float64(k.P99), "kernel-p99-ns")
	}
	var rate float64
	if res.RunTime > 0 {
		rate = float64(res.Received) / res.RunTime.Seconds()
	}
	b.ReportMetric(rate, "ops/s")
	b.ReportMetric(0, "ns/op")
	if res.Recorder != nil {
		writeBenchHistogram(b, res.Recorder.Snapshot())
	}
}
