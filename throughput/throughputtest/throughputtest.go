// Package throughputtest starts in-process iperf3-compatible servers for
// tests, in the manner of net/http/httptest, and measures throughput inside
// `go test -bench` (Benchmark). It has the shape of latencytest and
// cachetest: Config, NewServer(tb, cfg), Server.Addr, Close and Benchmark.
package throughputtest

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
)

// Config selects what NewServer starts. A nil *Config means a server on
// 127.0.0.1 with throughput's default limits.
type Config struct {
	// Host is the address to listen on; "" means "127.0.0.1".
	Host string
	// Server sets the server's limits and hooks (nil means defaults).
	// Its OnResult, when set, is called before Results receives the result.
	Server *throughput.ServerConfig
}

// Server is a throughput.Server running on a loopback port. It is safe for
// concurrent use.
type Server struct {
	// Addr is the server's "host:port", ready for throughput.Run or
	// `iperf3 -c host -p port`.
	Addr      string
	cancel    context.CancelFunc
	done      chan error
	results   chan *throughput.Result
	closeOnce sync.Once
	closeErr  error
}

// closeWait bounds how long Close waits for the server to end: every test
// ends within 100 ms of a cancel, so only a bug takes longer.
const closeWait = 15 * time.Second

// NewServer starts a server as cfg says (nil means defaults) and stops it
// when the test ends, failing the test if it does not stop or cfg is
// invalid.
func NewServer(tb testing.TB, cfg *Config) *Server {
	tb.Helper()
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.Host, "0"))
	if err != nil {
		tb.Fatalf("throughputtest: listen: %v", err)
	}
	s, err := start(ln, c.Server)
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
	c.OnResult = func(r throughput.Result) {
		if user != nil {
			user(r)
		}
		select {
		case s.results <- &r:
		default: // nobody reads them: drop the newest rather than block a test
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

// Close stops the server and waits (at most 15 s) for it to end. It may be
// called more than once; later calls return the first one's error. A zero
// Server's Close returns an error.
func (s *Server) Close() error {
	if s == nil || s.cancel == nil {
		return errors.New("throughputtest: Server not made by NewServer")
	}
	s.closeOnce.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if !errors.Is(err, context.Canceled) {
				s.closeErr = err
			}
		case <-time.After(closeWait):
			s.closeErr = errors.New("throughputtest: server did not stop within 15 s")
		}
	})
	return s.closeErr
}

// Benchmark runs one test with cfg against target (an in-process server
// when target is "") that moves b.N blocks: one b.N iteration is one block
// of cfg.BlockLen bytes (the throughput.Config default when 0) sent by the
// test's senders, all streams together, as iperf3 -k counts them. The
// benchmark framework sizes b.N by the time the test takes; the figure
// reported is the test's own.
//
// It reports one throughput figure, "bits/s": the test's received rate
// over its own counted time (Result.Total().Received.BitsPerSecond), and
// sets ns/op to 0, since the time per block of a test that also connects,
// sets up its streams and exchanges results means nothing. There is no
// B/s column (no b.SetBytes): a rate from the benchmark's timer would
// include that set-up, which at -benchtime 1x is most of the time. TCP
// retransmits per block ("retransmits/op", wherever the sender's count is
// known) and UDP loss ("lost-%") are reported in every run, zeros
// included, so that benchstat compares like with like. cfg's Duration and Bytes are
// replaced by the block count; cfg.Bidir is refused, since its blocks
// would count both ways. It returns the test's result.
func Benchmark(b *testing.B, target string, cfg *throughput.Config) *throughput.Result {
	b.Helper()
	var c throughput.Config
	if cfg != nil {
		c = *cfg
	}
	if c.Bidir {
		b.Fatal("throughputtest: Benchmark: cfg.Bidir counts blocks both ways; run each direction apart")
	}
	if target == "" {
		target = NewServer(b, nil).Addr
	}
	c.Duration, c.Bytes, c.Blocks = 0, 0, int64(b.N)
	b.ResetTimer()
	r, err := throughput.Run(b.Context(), target, &c)
	b.StopTimer()
	if err != nil {
		b.Fatalf("throughputtest: Benchmark: %v", err)
	}
	reportMetrics(b, r)
	return r
}

// reportMetrics reports r's rate, ns/op as 0 and the losses it had.
func reportMetrics(b *testing.B, r *throughput.Result) {
	t := r.Total()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(t.Received.BitsPerSecond, "bits/s")
	// Every metric appears in every run, zeros included, so that benchstat
	// compares like with like (issue 39); retransmits only where the
	// sender's count is known (-1: a stock peer sent, or not linux).
	if !r.Config.UDP && t.Sent.Retransmits >= 0 {
		b.ReportMetric(float64(t.Sent.Retransmits)/float64(b.N), "retransmits/op")
	}
	if r.Config.UDP {
		b.ReportMetric(t.Received.LostPercent, "lost-%")
	}
}
