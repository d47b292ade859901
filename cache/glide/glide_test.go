package glide_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/glide"
)

func endpointFor(s *cachetest.Server) *cache.Endpoint { return s.Endpoint() }

func shortRun(mode cache.ConnMode) *cache.WorkloadConfig {
	return &cache.WorkloadConfig{Engine: glide.Engine(), Mode: mode, Workers: 2, Duration: 300 * time.Millisecond,
		KeySpace: 100}
}

func requireClean(t *testing.T, r *cache.RunResult) {
	t.Helper()
	require.Zero(t, r.Errors, "%v", r.ErrorExamples)
	require.Positive(t, r.Attempts)
	require.Equal(t, r.Attempts, r.Latency.Observations, "every attempt is recorded")
	require.Positive(t, r.Latency.P50)
	require.Positive(t, r.OpsPerSec)
	require.Equal(t, glide.Engine().Name(), r.Engine)
}

// glide is slow under -race and each client starts a runtime thread: one
// short test per mode, plain and TLS + ACL.
func TestRunGlide(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(mode))
		require.NoError(t, err)
		requireClean(t, r)
	}
	c := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	r, err := cache.Run(context.Background(), endpointFor(c), shortRun(cache.Pooled))
	require.NoError(t, err)
	requireClean(t, r)
}

// Endpoint problems are reported before the run by cache's check, not as
// glide's coarser kinds.
func TestRunGlideEndpointCheckErrors(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	bad := *endpointFor(s)
	bad.Password = "wrong"
	_, err := cache.Run(context.Background(), &bad, shortRun(cache.Pooled))
	require.ErrorIs(t, err, cache.ErrWrongPass)

	bad = *endpointFor(s)
	bad.CACertPEM = nil
	_, err = cache.Run(context.Background(), &bad, shortRun(cache.Pooled))
	require.ErrorIs(t, err, cache.ErrTLSVerify)

	bad = *endpointFor(s)
	bad.ServerName = "127.0.0.1"
	_, err = cache.Run(context.Background(), &bad, shortRun(cache.Pooled))
	require.ErrorContains(t, err, "glide: cannot set the TLS server name")
}

// afterOps returns an Interleave channel whose second function, which
// the run's one worker takes only after an operation that followed the
// first, calls f: f runs once the run is under way, however slowly the
// machine runs it (glide calls no trace hooks to count by).
func afterOps(t *testing.T, f func()) <-chan func(context.Context, cache.Client, error) {
	jobs := make(chan func(context.Context, cache.Client, error))
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for _, job := range []func(context.Context, cache.Client, error){
			func(context.Context, cache.Client, error) {},
			func(context.Context, cache.Client, error) { f() },
		} {
			select {
			case jobs <- job:
			case <-done:
				return
			}
		}
	}()
	return jobs
}

// A server killed mid-run: glide's failures are counted with its kinds
// and the run still returns, its window as long as asked.
func TestRunGlideServerKilledMidRun(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	cfg := shortRun(cache.Pooled)
	cfg.Workers, cfg.Duration = 1, 1200*time.Millisecond
	cfg.Interleave = afterOps(t, s.Kill)
	ep := endpointFor(s)
	ep.RequestTimeout, ep.ConnectTimeout = 200*time.Millisecond, 200*time.Millisecond
	start := time.Now()
	r, err := cache.Run(context.Background(), ep, cfg)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), cfg.Duration+5*time.Second, "returns: no hang on a dead server")
	assert.Equal(t, cfg.Duration, r.Window)
	assert.Positive(t, r.Errors)
	assert.Positive(t, r.Succeeded, "the operation before the kill")
	assert.Equal(t, r.Attempts, r.Succeeded+r.Errors)
	var sum int64
	for k, n := range r.ErrorsByKind {
		assert.Contains(t, []cache.ErrorKind{cache.ErrConnection, cache.ErrConnectRefused, cache.ErrTimeout, cache.ErrClosing, cache.ErrRecovery}, k)
		sum += n
	}
	assert.Equal(t, r.Errors, sum)
}

// Cancelling a glide run returns promptly: glide's commands take the
// context. The cancel comes once an operation has completed.
func TestRunGlideCancel(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	cfg := shortRun(cache.Pooled)
	cfg.Workers, cfg.Duration = 1, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	canceled := make(chan time.Time, 1)
	cfg.Interleave = afterOps(t, func() { canceled <- time.Now(); cancel() })
	r, err := cache.Run(ctx, endpointFor(s), cfg)
	require.ErrorIs(t, err, context.Canceled)
	// The bound is generous for a loaded machine under -race; the contract is
	// 100 ms once the pooled clients exist.
	assert.Less(t, time.Since(<-canceled), time.Second)
	require.NotNil(t, r)
	assert.Positive(t, r.Attempts)
	assert.Zero(t, r.Errors)
}

// BenchmarkWorkload is cachetest.Benchmark on a local server, per mode.
func BenchmarkWorkload(b *testing.B) {
	s := cachetest.NewServer(b, nil)
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		b.Run(string(mode), func(b *testing.B) {
			cachetest.Benchmark(b, endpointFor(s), &cache.WorkloadConfig{Engine: glide.Engine(), Mode: mode, Workers: 4})
		})
	}
}

// Open with a nil Endpoint is an error, not a panic; so is a Credentials
// func that fails, reported as cache's ErrAuth when a client is created.
func TestGlideOpenBadInput(t *testing.T) {
	_, err := glide.Engine().Open(context.Background(), nil)
	require.ErrorContains(t, err, "nil Endpoint")

	newClient, err := glide.Engine().Open(context.Background(), &cache.Endpoint{Addr: "127.0.0.1:1",
		Credentials: func(context.Context) (string, cache.Secret, error) { return "", "", errors.New("no token") }})
	require.NoError(t, err)
	_, err = newClient(context.Background())
	require.ErrorIs(t, err, cache.ErrAuth)
	require.ErrorContains(t, err, "no token")
}
