//go:build linux

package cache_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// An open-loop pooled run on the resp engine has a kernel view of its
// requests beside the application's: every successful request has one or
// a lost stamp, and the kernel's time of a request is inside the
// application's (its service time, from the send call to the read of the
// reply), so the view's median is not above the service time's.
func TestKernelViewOpenLoopPooled(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	res, err := cache.Run(context.Background(), s.Endpoint(), &cache.WorkloadConfig{
		Rate: 500, Workers: 1, Duration: 400 * time.Millisecond, GetWeight: 1, SetWeight: 0,
	})
	require.NoError(t, err)
	require.NotNil(t, res.Kernel, "no kernel view: %s", res.NoKernelStamps)
	assert.Empty(t, res.NoKernelStamps)
	require.NotNil(t, res.Schedule)
	k := res.Kernel
	t.Logf("kernel view p50 %v p99 %v (%d, %d lost); service p50 %v p99 %v; response p50 %v p99 %v",
		k.Response.P50, k.Response.P99, k.Response.Observations, k.StampsLost,
		res.Schedule.Service.P50, res.Schedule.Service.P99, res.Latency.P50, res.Latency.P99)
	assert.Positive(t, k.Response.Observations)
	assert.Equal(t, res.Succeeded, k.Response.Observations+k.StampsLost)
	assert.Positive(t, k.Response.Min)
	assert.LessOrEqual(t, k.Response.P50, res.Schedule.Service.P50+20*time.Microsecond)
	require.NotNil(t, k.Histogram)
	assert.Equal(t, k.Response.Observations, k.Histogram.TotalCount())

	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Contains(t, m, "kernel")
	assert.Contains(t, m["kernel"], "response")
	assert.NotContains(t, m, "no_kernel_stamps")
}

// Runs without a kernel view say why, and carry no zeros in its place.
func TestKernelViewAbsentSaysWhy(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	for _, tc := range []struct {
		cfg  cache.WorkloadConfig
		want string
	}{
		{cache.WorkloadConfig{Workers: 1, Duration: 100 * time.Millisecond}, "closed-loop run"},
		{cache.WorkloadConfig{Mode: cache.ConnectPerOp, Rate: 200, Workers: 1, Duration: 200 * time.Millisecond}, "connect-per-op run"},
		{cache.WorkloadConfig{Rate: 200, Workers: 1, Duration: 200 * time.Millisecond, NoKernelView: true}, "not asked for"},
	} {
		res, err := cache.Run(context.Background(), s.Endpoint(), &tc.cfg)
		require.NoError(t, err)
		assert.Nil(t, res.Kernel)
		assert.Contains(t, res.NoKernelStamps, tc.want)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		assert.NotContains(t, string(b), `"kernel"`)
		assert.Contains(t, string(b), `"no_kernel_stamps":"`+tc.want)
	}
	// A TLS connection's replies are not the kernel's to stamp.
	ts := cachetest.NewServer(t, &cachetest.Config{TLS: true})
	res, err := cache.Run(context.Background(), ts.Endpoint(), &cache.WorkloadConfig{
		Rate: 200, Workers: 1, Duration: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.Nil(t, res.Kernel)
	assert.Contains(t, res.NoKernelStamps, "TLS")
}

// A run of more than twice the sample's floor stamps a sample of its
// requests: here 2,400 expected, one in every two, so half the successful
// requests have a view (or a lost stamp), and few are lost.
func TestKernelViewSampled(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	res, err := cache.Run(context.Background(), s.Endpoint(), &cache.WorkloadConfig{
		Rate: 4000, Workers: 1, Duration: 600 * time.Millisecond, GetWeight: 1, SetWeight: 0,
	})
	require.NoError(t, err)
	require.NotNil(t, res.Kernel, "no kernel view: %s", res.NoKernelStamps)
	k := res.Kernel
	t.Logf("%d succeeded, %d stamped (%d lost): kernel p50 %v p99 %v, application p50 %v p99 %v",
		res.Succeeded, k.Response.Observations+k.StampsLost, k.StampsLost, k.Response.P50, k.Response.P99, res.Latency.P50, res.Latency.P99)
	assert.Positive(t, res.Succeeded)
	stamped := k.Response.Observations + k.StampsLost
	assert.InDelta(t, float64(res.Succeeded)/2, float64(stamped), 1)
	// A loaded machine may lose one (CI, 2026-12-07: 1 of 1,200); the
	// view still holds 99 % of its sample.
	assert.LessOrEqual(t, k.StampsLost, stamped/100, "at most 1 %% of the sample lost")
}
