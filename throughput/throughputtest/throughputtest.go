// Package throughputtest starts in-process iperf3-compatible servers for
// tests, in the manner of net/http/httptest, and measures throughput inside
// `go test -bench` with b.ReportMetric.
package throughputtest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
)

// Server is a throughput.Server running on a loopback port. It is safe for
// concurrent use.
type Server struct {
	// Addr is the server's "host:port", ready for throughput.Run or
	// `iperf3 -c host -p port`.
	Addr    string
	cancel  context.CancelFunc
	done    chan error
	results chan *throughput.Result
}

// NewServer starts a server on 127.0.0.1 with cfg (nil means defaults) and
// stops it when the test ends, failing the test if it does not stop or
// cfg is invalid. cfg.OnResult is wrapped so that Results also receives
// every result.
func NewServer(tb testing.TB, cfg *throughput.ServerConfig) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("throughputtest: listen: %v", err)
	}
	s, err := start(ln, cfg)
	if err != nil {
		_ = ln.Close()
		tb.Fatalf("throughputtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("throughputtest: %v", err)
		}
	})
	return s
}

// start runs a server on ln until Close.
func start(ln net.Listener, cfg *throughput.ServerConfig) (*Server, error) {
	c := throughput.ServerConfig{}
	if cfg != nil {
		c = *cfg
	}
	s := &Server{Addr: ln.Addr().String(), done: make(chan error, 1), results: make(chan *throughput.Result, 128)}
	user := c.OnResult
	c.OnResult = func(r *throughput.Result) {
		if user != nil {
			user(r)
		}
		select {
		case s.results <- r:
		default: // nobody reads them: drop the oldest-unread rather than block a test
		}
	}
	srv, err := throughput.NewServer(&c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- srv.Serve(ctx, ln) }()
	return s, nil
}

// Results delivers the server's view of each finished test (up to 128 unread).
func (s *Server) Results() <-chan *throughput.Result { return s.results }

// Close stops the server and waits (at most 15 s) for it to end.
func (s *Server) Close() error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // Close may be called again
		return err
	case <-time.After(15 * time.Second):
		return context.DeadlineExceeded
	}
}

// Bench runs b.N tests with cfg against addr (an in-process server when
// addr is "") and reports the received bits/s over all of them as
// "bits/s", TCP retransmits per test as "retransmits/op", and UDP loss as
// "lost-%"; ns/op is set to 0 because time per iteration means nothing
// here. It returns the last result.
func Bench(b *testing.B, addr string, cfg *throughput.Config) *throughput.Result {
	b.Helper()
	if addr == "" {
		addr = NewServer(b, nil).Addr
	}
	var bytes int64
	var secs float64
	var retr, lost, pkts int64
	var last *throughput.Result
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := throughput.Run(context.Background(), addr, cfg)
		if err != nil {
			b.Fatalf("throughputtest: %v", err)
		}
		last = r
		for _, s := range []*throughput.Summary{r.Upload, r.Download} {
			if s == nil {
				continue
			}
			bytes += s.Received.Bytes
			if s.Sent.Retransmits > 0 {
				retr += s.Sent.Retransmits
			}
			lost += s.Received.LostPackets
			pkts += s.Received.Packets
		}
		secs += r.Streams[0].Duration.Seconds()
	}
	b.StopTimer()
	if secs > 0 {
		b.ReportMetric(float64(bytes)*8/secs, "bits/s")
	}
	b.ReportMetric(float64(retr)/float64(b.N), "retransmits/op")
	if pkts > 0 {
		b.ReportMetric(100*float64(lost)/float64(pkts), "lost-%")
	}
	b.ReportMetric(0, "ns/op")
	return last
}
