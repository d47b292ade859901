package cache_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

// denied is the reply of a redis-server in protected mode to a client from
// another host, to every command.
const denied = "-DENIED Redis is running in protected mode because protected mode is enabled\r\n"

// A run whose every operation failed reads as failed: an error saying so
// that wraps the first failure, the counts, the first error's text, and no
// latency (the error replies' round trips are not GET latencies).
func TestRunEveryOperationFailed(t *testing.T) {
	addr, _ := fakeNode(t, func([]string) string { return denied })
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		t.Run(string(mode), func(t *testing.T) {
			r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr},
				&cache.WorkloadConfig{Mode: mode, Workers: 2, MaxOps: 40, Duration: 10 * time.Second})
			require.ErrorIs(t, err, cache.ErrCommand)
			assert.ErrorContains(t, err, "all 40 operations failed")
			assert.ErrorContains(t, err, "DENIED")
			require.NotNil(t, r)
			assert.True(t, r.Failed())
			assert.Equal(t, int64(40), r.Attempts)
			assert.Equal(t, int64(40), r.Errors)
			assert.Zero(t, r.Succeeded)
			assert.Equal(t, map[cache.ErrorKind]int64{cache.ErrCommand: 40}, r.ErrorsByKind)
			assert.Contains(t, r.FirstError, "DENIED Redis is running in protected mode")
			assert.Zero(t, r.Latency.Observations)
			assert.Zero(t, r.Latency.P50)
			assert.Nil(t, r.Histogram)
			assert.Zero(t, r.OpsPerSec)
		})
	}
	t.Run("open loop", func(t *testing.T) {
		r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr},
			&cache.WorkloadConfig{Rate: 2000, Workers: 2, MaxOps: 40, Duration: 10 * time.Second})
		require.ErrorIs(t, err, cache.ErrCommand)
		require.NotNil(t, r)
		assert.True(t, r.Failed())
		assert.Equal(t, int64(40), r.Attempts)
		assert.Equal(t, int64(40), r.Errors)
		assert.Zero(t, r.Succeeded)
		assert.Zero(t, r.Latency.Observations)
		assert.Nil(t, r.Histogram)
		assert.Equal(t, int64(40), r.Schedule.Response.Observations, "the schedule still has every request")
	})
}

// When only some operations fail (SETs denied, GETs answered), the run
// succeeds and its latencies are those of the successful operations only.
func TestRunLatencyOfSuccessesOnly(t *testing.T) {
	addr, _ := fakeNode(t, func(args []string) string {
		if strings.EqualFold(args[0], "GET") {
			return "$-1\r\n"
		}
		return denied
	})
	for _, rate := range []float64{0, 2000} {
		r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr},
			&cache.WorkloadConfig{Rate: rate, Workers: 2, MaxOps: 200, Duration: 10 * time.Second})
		require.NoError(t, err, "rate %v", rate)
		assert.False(t, r.Failed())
		assert.Equal(t, int64(200), r.Attempts)
		assert.Equal(t, r.Attempts, r.Succeeded+r.Errors)
		assert.Positive(t, r.Succeeded, "the GETs")
		assert.Positive(t, r.Errors, "the SETs")
		assert.Equal(t, r.Succeeded, r.Latency.Observations, "latencies of successes only")
		require.NotNil(t, r.Histogram)
		assert.Equal(t, r.Succeeded, r.Histogram.TotalCount())
		assert.Contains(t, r.FirstError, "DENIED")
	}
}

// An engine's error that quotes the endpoint's password is redacted in the
// result and in the error returned.
func TestRunFirstErrorRedacted(t *testing.T) {
	const pw = "pw-quoted-7731"
	addr, _ := fakeNode(t, func(args []string) string {
		if strings.EqualFold(args[0], "AUTH") {
			return "+OK\r\n"
		}
		return "-ERR this server quotes " + pw + "\r\n"
	})
	r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr, Password: pw},
		&cache.WorkloadConfig{Workers: 1, MaxOps: 3, Duration: 10 * time.Second})
	require.ErrorIs(t, err, cache.ErrCommand)
	assert.NotContains(t, err.Error(), pw)
	assert.Contains(t, err.Error(), "quotes [redacted]")
	assert.NotContains(t, r.FirstError, pw)
	assert.Contains(t, r.FirstError, "[redacted]")
	for _, ex := range r.ErrorExamples {
		assert.NotContains(t, ex, pw)
	}
}

// Keys above the table built before the run are built per operation, with
// the same names: a key space of 2^20 uses numbers beyond 65,535, and never
// one outside the key space.
func TestRunLargeKeySpace(t *testing.T) {
	const space = 1 << 20
	var (
		mu   sync.Mutex
		high int
		bad  []string
	)
	addr, _ := fakeNode(t, func(args []string) string {
		if len(args) > 1 {
			n, err := strconv.Atoi(strings.TrimPrefix(args[1], "k:"))
			mu.Lock()
			if err != nil || n < 0 || n >= space || !strings.HasPrefix(args[1], "k:") {
				bad = append(bad, args[1])
			}
			high = max(high, n)
			mu.Unlock()
		}
		return "+OK\r\n"
	})
	r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr},
		&cache.WorkloadConfig{Workers: 2, MaxOps: 500, KeySpace: space, KeyPrefix: "k:", Duration: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, int64(500), r.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bad)
	assert.GreaterOrEqual(t, high, 1<<16, "keys beyond the prebuilt table are used")
}
