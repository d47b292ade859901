package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

func shortRun(engine cache.Engine, mode cache.Mode) *cache.WorkloadConfig {
	return &cache.WorkloadConfig{Engine: engine, Mode: mode, Workers: 2, Duration: 300 * time.Millisecond,
		KeySpace: 100, RequestTimeout: time.Second, ConnectTimeout: time.Second}
}

func requireClean(t *testing.T, r *cache.RunResult) {
	t.Helper()
	require.Zero(t, r.Errors, "%v", r.ErrorExamples)
	require.Positive(t, r.Attempts)
	require.Equal(t, r.Attempts, r.Latency.Observations, "every attempt is recorded")
	require.NotNil(t, r.Histogram)
	require.Equal(t, r.Attempts, r.Histogram.TotalCount(), "the histogram holds every attempt")
	require.Positive(t, r.P50Us)
	require.GreaterOrEqual(t, r.P99Us, r.P50Us)
	require.Positive(t, r.OpsPerSec)
}

func TestRunRespPlainBothModes(t *testing.T) {
	s := cachetest.NewPlain(t)
	for _, mode := range []cache.Mode{cache.ModePool, cache.ModeConnect} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(cache.EngineResp, mode))
		require.NoError(t, err)
		requireClean(t, r)
		assert.Equal(t, cache.EngineResp, r.Engine)
		assert.Equal(t, mode, r.Mode)
		assert.Equal(t, 2, r.Workers)
	}
}

func TestRunRespTLSACLConnect(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	r, err := cache.Run(context.Background(), endpointFor(s), shortRun(cache.EngineResp, cache.ModeConnect))
	require.NoError(t, err)
	requireClean(t, r)
}

func TestRunRespCluster(t *testing.T) {
	s := cachetest.NewCluster(t)
	for _, mode := range []cache.Mode{cache.ModePool, cache.ModeConnect} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(cache.EngineResp, mode))
		require.NoError(t, err)
		requireClean(t, r)
	}
}

// Endpoint problems are reported before the run, each as its own kind.
func TestRunEndpointCheckErrors(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	bad := *endpointFor(s)
	bad.Password = "wrong"
	_, err := cache.Run(context.Background(), &bad, shortRun(cache.EngineGlide, cache.ModePool))
	require.ErrorIs(t, err, cache.ErrWrongPass)

	bad = *endpointFor(s)
	bad.CACertPEM = nil
	_, err = cache.Run(context.Background(), &bad, shortRun(cache.EngineGlide, cache.ModePool))
	require.ErrorIs(t, err, cache.ErrTLSVerify)

	stopped := cachetest.NewPlain(t)
	stopped.Kill()
	_, err = cache.Run(context.Background(), endpointFor(stopped), shortRun(cache.EngineResp, cache.ModePool))
	require.ErrorIs(t, err, cache.ErrConnectRefused)

	_, err = cache.Run(context.Background(), endpointFor(s), &cache.WorkloadConfig{Engine: "nope"})
	require.Error(t, err)
}

// A server killed mid-run: the runner counts the failures and still returns
// within the duration plus about one timeout.
func TestRunServerKilledMidRun(t *testing.T) {
	for _, engine := range []cache.Engine{cache.EngineResp, cache.EngineGlide} {
		t.Run(string(engine), func(t *testing.T) {
			s := cachetest.NewPlain(t)
			cfg := shortRun(engine, cache.ModePool)
			cfg.Duration = 1200 * time.Millisecond
			cfg.RequestTimeout, cfg.ConnectTimeout = 200*time.Millisecond, 200*time.Millisecond
			time.AfterFunc(400*time.Millisecond, s.Kill)
			start := time.Now()
			r, err := cache.Run(context.Background(), endpointFor(s), cfg)
			require.NoError(t, err)
			took := time.Since(start)
			assert.Less(t, took, cfg.Duration+time.Second, "returns on time")
			assert.Positive(t, r.Errors)
			assert.Less(t, r.Errors, r.Attempts)
			assert.Equal(t, r.Attempts, r.Latency.Observations, "failed attempts are recorded too")
			var sum int64
			for k, n := range r.ErrorsByKind {
				assert.Contains(t, []cache.ErrorKind{cache.ErrConnection, cache.ErrConnectRefused, cache.ErrTimeout, cache.ErrClosing, cache.ErrRecovery}, k)
				sum += n
			}
			assert.Equal(t, r.Errors, sum)
		})
	}
}

// glide is slow under -race and each client starts a runtime thread: one
// short test per mode, plain and TLS + ACL.
func TestRunGlide(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw"})
	for _, mode := range []cache.Mode{cache.ModePool, cache.ModeConnect} {
		r, err := cache.Run(context.Background(), endpointFor(s), shortRun(cache.EngineGlide, mode))
		require.NoError(t, err)
		requireClean(t, r)
		assert.Equal(t, cache.EngineGlide, r.Engine)
	}
	c := cachetest.NewCluster(t)
	r, err := cache.Run(context.Background(), endpointFor(c), shortRun(cache.EngineGlide, cache.ModePool))
	require.NoError(t, err)
	requireClean(t, r)
}

func TestRunCancel(t *testing.T) {
	s := cachetest.NewPlain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cfg := shortRun(cache.EngineResp, cache.ModePool)
	cfg.Duration = time.Minute
	start := time.Now()
	r, err := cache.Run(ctx, endpointFor(s), cfg)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Zero(t, r.Errors, "the caller's cancellation is not an endpoint error")
	assert.Positive(t, r.Attempts)
}

func TestRunRepeatedAndCompare(t *testing.T) {
	s := cachetest.NewPlain(t)
	cfg := shortRun(cache.EngineResp, cache.ModePool)
	cfg.Duration = 150 * time.Millisecond
	n := 0
	a, err := cache.RunRepeated(context.Background(), endpointFor(s), cfg, 3, func(*cache.RunResult) { n++ })
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, 3, a.Runs)
	require.Len(t, a.Results, 3)
	var att int64
	for _, r := range a.Results {
		att += r.Attempts
		assert.GreaterOrEqual(t, r.P50Us, a.P50UsRange[0])
		assert.LessOrEqual(t, r.P50Us, a.P50UsRange[1])
	}
	assert.Equal(t, att, a.Attempts)
	cmp := cache.Compare("a", a, "a", a)
	assert.InDelta(t, 1, cmp.P50Ratio, 1e-9)
	assert.InDelta(t, 1, cmp.OpsPerSecRatio, 1e-9)
}
