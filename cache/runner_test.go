package cache_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

func shortRun(mode cache.ConnMode) *cache.WorkloadConfig {
	return &cache.WorkloadConfig{Mode: mode, Workers: 2, Duration: 300 * time.Millisecond,
		KeySpace: 100}
}

func requireClean(t *testing.T, r *cache.RunResult) {
	t.Helper()
	require.Zero(t, r.Errors, "%v", r.ErrorExamples)
	require.Positive(t, r.Attempts)
	require.Equal(t, r.Attempts, r.Latency.Observations, "every attempt is recorded")
	require.NotNil(t, r.Histogram)
	require.Equal(t, r.Attempts, r.Histogram.TotalCount(), "the histogram holds every attempt")
	require.Positive(t, float64(r.Latency.P50)/1e3)
	require.GreaterOrEqual(t, float64(r.Latency.P99)/1e3, float64(r.Latency.P50)/1e3)
	require.Positive(t, r.OpsPerSec)
}

func TestRunRespPlainBothModes(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(mode))
		require.NoError(t, err)
		requireClean(t, r)
		assert.Equal(t, "resp", r.Engine)
		assert.Equal(t, mode, r.Mode)
	}
}

func TestRunRespTLSACLConnect(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	r, err := cache.Run(context.Background(), endpointFor(s), shortRun(cache.ConnectPerOp))
	require.NoError(t, err)
	requireClean(t, r)
}

func TestRunRespCluster(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(mode))
		require.NoError(t, err)
		requireClean(t, r)
	}
}

// Endpoint problems are reported before the run, each as its own kind.
func TestRunEndpointCheckErrors(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	bad := *endpointFor(s)
	bad.Password = "wrong"
	_, err := cache.Run(context.Background(), &bad, shortRun(cache.Pooled))
	require.ErrorIs(t, err, cache.ErrWrongPass)

	bad = *endpointFor(s)
	bad.CACertPEM = nil
	_, err = cache.Run(context.Background(), &bad, shortRun(cache.Pooled))
	require.ErrorIs(t, err, cache.ErrTLSVerify)

	stopped := cachetest.NewServer(t, nil)
	stopped.Kill()
	_, err = cache.Run(context.Background(), endpointFor(stopped), shortRun(cache.Pooled))
	require.ErrorIs(t, err, cache.ErrConnectRefused)

	_, err = cache.Run(context.Background(), endpointFor(s), &cache.WorkloadConfig{Mode: "nope"})
	require.Error(t, err)
}

// serverGoneKinds are the kinds a run may see when its server disappears.
var serverGoneKinds = []cache.ErrorKind{cache.ErrConnection, cache.ErrConnectRefused, cache.ErrTimeout, cache.ErrClosing, cache.ErrRecovery}

// A server killed mid-run: the runner counts the failures and still
// returns, its window as long as asked. The server is killed once the
// run's tenth command has been answered, however slowly the machine runs
// it, so some operations succeeded and every later one fails.
func TestRunServerKilledMidRun(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	cfg := shortRun(cache.Pooled)
	cfg.Duration = 1200 * time.Millisecond
	ep := endpointFor(s)
	ep.RequestTimeout, ep.ConnectTimeout = 200*time.Millisecond, 200*time.Millisecond
	var (
		mu   sync.Mutex
		seen int
	)
	ctx := cache.WithClientTrace(context.Background(), nil, func(i cache.PhaseInfo) {
		mu.Lock()
		defer mu.Unlock()
		if i.Phase == cache.PhaseCommand && i.Err == nil {
			if seen++; seen == 10 {
				s.Kill()
			}
		}
	})
	start := time.Now()
	r, err := cache.Run(ctx, ep, cfg)
	require.NoError(t, err)
	t.Logf("took %v: run %v, window %v, %d attempts, %d errors", time.Since(start), r.Elapsed, r.Window, r.Attempts, r.Errors)
	assert.Less(t, time.Since(start), cfg.Duration+5*time.Second, "returns: no hang on a dead server")
	assert.Equal(t, cfg.Duration, r.Window)
	assert.Positive(t, r.Errors)
	assert.GreaterOrEqual(t, r.Succeeded, int64(10), "the commands before the kill")
	assert.Equal(t, r.Succeeded, r.Latency.Observations, "only successful operations have latencies")
	assert.Equal(t, r.Attempts, r.Succeeded+r.Errors)
	assert.NotEmpty(t, r.FirstError)
	assert.False(t, r.Failed())
	var sum int64
	for k, n := range r.ErrorsByKind {
		assert.Contains(t, serverGoneKinds, k)
		sum += n
	}
	assert.Equal(t, r.Errors, sum)
}

// resetListener accepts connections and resets each at once (SO_LINGER 0
// sends RST instead of FIN), like a server going away while clients connect.
func resetListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	})
	return l.Addr().String()
}

// Issue 15: a connection reset while it is being set up is a refusal, not a
// generic connect failure, whichever phase the reset lands in. With a
// password the set-up includes AUTH, so every reset lands in set-up.
func TestResetDuringSetUpIsRefused(t *testing.T) {
	addr := resetListener(t)
	p, err := cache.NewProber(&cache.Endpoint{Addr: addr, Password: "pw", ConnectTimeout: 2 * time.Second})
	require.NoError(t, err)
	phases := map[cache.Phase]int{}
	sum, err := p.Run(context.Background(), cache.ProbeConfigWith(50, 2, 0, nil, func(r cache.ProbeResult) {
		phases[errPhase(&r)]++
	}))
	require.ErrorIs(t, err, cache.ErrConnectRefused, "every probe failed")
	assert.Equal(t, map[cache.ErrorKind]int{cache.ErrConnectRefused: 50}, sum.ErrorsByKind, "%v", sum.ErrorExamples)
	t.Logf("resets seen per phase: %v", phases)

	// The same over TLS: the reset lands in the handshake, or in connect.
	p, err = cache.NewProber(&cache.Endpoint{Addr: addr, TLS: true, InsecureSkipVerify: true, ConnectTimeout: 2 * time.Second})
	require.NoError(t, err)
	r, err := p.Probe(context.Background())
	require.ErrorIs(t, err, cache.ErrConnectRefused)
	assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE), "a reset: %v", err)
	assert.Contains(t, []cache.Phase{cache.PhaseConnect, cache.PhaseTLS}, errPhase(r))
}

// silentListener accepts connections and never answers, like a peer that
// stops answering mid-handshake; it closes them when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	return l.Addr().String()
}

// cancelBound is how soon a blocking call must return after its context is
// cancelled: the contract is 100 ms, with headroom for a loaded 2-core
// machine under -race.
const cancelBound = time.Second

// cancelAfter returns a context cancelled after d and the time it was.
func cancelAfter(t *testing.T, d time.Duration) (context.Context, func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu sync.Mutex
		at time.Time
	)
	tm := time.AfterFunc(d, func() {
		mu.Lock()
		at = time.Now()
		mu.Unlock()
		cancel()
	})
	t.Cleanup(func() { tm.Stop(); cancel() })
	return ctx, func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
}

// cancelAfterCommands returns a context cancelled once n commands have been
// answered, counting through a trace, and the time it was cancelled: the run
// is known to be under way whatever the machine's load.
func cancelAfterCommands(t *testing.T, n int) (context.Context, func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var (
		mu   sync.Mutex
		seen int
		at   time.Time
	)
	ctx = cache.WithClientTrace(ctx, nil, func(i cache.PhaseInfo) {
		if i.Phase != cache.PhaseCommand || i.Err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == n {
			at = time.Now()
			cancel()
		}
	})
	return ctx, func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
}

// Cancelling a run against a real server returns promptly with the partial
// result, in both modes.
func TestRunCancel(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := shortRun(mode)
			cfg.Duration = time.Minute
			ctx, at := cancelAfterCommands(t, 50)
			r, err := cache.Run(ctx, endpointFor(s), cfg)
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(at()), cancelBound)
			assert.Zero(t, r.Errors, "the caller's cancellation is not an endpoint error")
			assert.GreaterOrEqual(t, r.Attempts, int64(49), "the attempts before the cancel are counted")
		})
	}
}

// Cancelling while the peer has stopped answering, in each phase a client
// can be stuck in: the command (plain), AUTH (password) and the TLS
// handshake. The endpoint check itself is stuck with AUTH and TLS, so those
// return an empty result; with plain TCP the check passes and the run has
// started.
func TestRunCancelSilentPeer(t *testing.T) {
	addr := silentListener(t)
	for name, ep := range map[string]*cache.Endpoint{
		"command": {Addr: addr},
		"auth":    {Addr: addr, Password: "pw"},
		"tls":     {Addr: addr, TLS: true, InsecureSkipVerify: true},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := shortRun(cache.Pooled)
			cfg.Duration = time.Minute
			ep.RequestTimeout, ep.ConnectTimeout = time.Minute, time.Minute
			ctx, at := cancelAfter(t, 200*time.Millisecond)
			r, err := cache.Run(ctx, ep, cfg)
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(at()), cancelBound)
			require.NotNil(t, r)
			assert.Zero(t, r.Errors)
			if name != "command" {
				assert.ErrorIs(t, err, cache.ErrCanceled)
				assert.Zero(t, r.Attempts, "the run never started")
			}
		})
	}
}

// WorkloadConfig.Interleave runs the caller's functions on the workers'
// own clients between their operations.
func TestRunInterleave(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	jobs := make(chan func(context.Context, cache.Client, error))
	cfg := shortRun(cache.Pooled)
	cfg.Duration, cfg.Interleave = 2*time.Second, jobs
	results := make(chan error, 5)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 5 {
			job := func(ctx context.Context, c cache.Client, err error) {
				if err == nil && c == nil {
					err = errors.New("no client and no error")
				}
				if err == nil {
					err = c.Set(ctx, "interleaved", "v")
				}
				results <- err
			}
			select {
			case jobs <- job:
			case <-stop: // the run ended first: the count below fails
				return
			}
		}
	})
	r, err := cache.Run(context.Background(), endpointFor(s), cfg)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	assert.Zero(t, r.Errors)
	require.Len(t, results, 5, "every job ran during the run")
	for range 5 {
		require.NoError(t, <-results)
	}
}
