// Package latencytest starts in-process sockperf-compatible servers for tests,
// the way net/http/httptest starts HTTP servers, and measures them from
// benchmarks.
package latencytest

import (
	"context"
	"errors"
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
	// UDPAddr and TCPAddr are the "host:port" addresses the server listens
	// on; one is empty when Config.Network selected only the other.
	UDPAddr, TCPAddr string
	// Server is the underlying server, for its Stats.
	Server *latency.Server

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// NewServer starts a sockperf-compatible echo server on free loopback ports
// and stops it when the test ends (or at Close). It fails tb if the server
// cannot start.
func NewServer(tb testing.TB, cfg *Config) *Server {
	tb.Helper()
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	srv, err := latency.NewServer(c.Server)
	if err != nil {
		tb.Fatalf("latencytest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, cancel: cancel}
	tb.Cleanup(s.Close)
	addr := net.JoinHostPort(c.Host, "0")
	for _, network := range []string{"udp", "tcp"} {
		if c.Network != "" && c.Network != network {
			continue
		}
		var serve func() error
		if network == "udp" {
			pc, err := net.ListenPacket(network, addr)
			if err != nil {
				tb.Fatalf("latencytest: %v", err)
			}
			s.UDPAddr = pc.LocalAddr().String()
			if c.Impair != nil {
				pc = newImpairedConn(pc, c.Impair)
			}
			serve = func() error { return srv.ServePacket(ctx, pc) }
		} else {
			ln, err := net.Listen(network, addr)
			if err != nil {
				tb.Fatalf("latencytest: %v", err)
			}
			s.TCPAddr = ln.Addr().String()
			serve = func() error { return srv.Serve(ctx, ln) }
		}
		s.wg.Go(func() {
			if err := serve(); !errors.Is(err, context.Canceled) {
				tb.Errorf("latencytest: %v", err)
			}
		})
	}
	if s.UDPAddr == "" && s.TCPAddr == "" {
		tb.Fatalf("latencytest: network %q is not udp, tcp or empty", c.Network)
	}
	return s
}

// Close stops the server and waits for its goroutines. It is safe to call
// more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
}

// Benchmark measures b.N round trips to addr with latency.PingPong and
// reports the round-trip percentiles as p50-ns, p99-ns and p999-ns with
// ns/op set to 0, so that benchstat compares the percentiles of runs. cfg may
// be nil; its Count is replaced by b.N and, unless set, its Duration bound
// is lifted. Use it from a user's benchmark:
//
//	func BenchmarkRTT(b *testing.B) { latencytest.Benchmark(b, addr, nil) }
func Benchmark(b *testing.B, addr string, cfg *latency.PingPongConfig) {
	b.Helper()
	var c latency.PingPongConfig
	if cfg != nil {
		c = *cfg
	}
	c.Count = int64(b.N)
	b.ResetTimer()
	res, err := latency.PingPong(b.Context(), addr, &c)
	b.StopTimer()
	if err != nil {
		b.Fatalf("latencytest: %v", err)
	}
	if res.Dropped > 0 {
		b.Logf("latencytest: %d of %d round trips dropped", res.Dropped, b.N)
	}
	b.ReportMetric(res.P50Us*1e3, "p50-ns")
	b.ReportMetric(res.P99Us*1e3, "p99-ns")
	b.ReportMetric(res.P999Us*1e3, "p999-ns")
	b.ReportMetric(0, "ns/op")
}
