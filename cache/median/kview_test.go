package median_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// The kernel view's medians come from the runs that have one; with none,
// the row says why instead of showing zeros.
func TestSummarizeKernelView(t *testing.T) {
	run := func(p50 time.Duration) *cache.RunResult {
		r := &cache.RunResult{Engine: "resp", Mode: cache.Pooled, Attempts: 10, Succeeded: 10, Latency: latency.Summary{P50: 3 * p50, P99: 9 * p50}}
		if p50 > 0 {
			r.Kernel = &cache.KernelView{Response: latency.Summary{P50: p50, P99: 2 * p50}}
		} else {
			r.NoKernelStamps = "closed-loop run"
		}
		return r
	}
	a := median.Summarize([]*cache.RunResult{run(10 * time.Microsecond), run(0), run(30 * time.Microsecond)})
	require.NotNil(t, a.KernelP50)
	assert.Equal(t, 20*time.Microsecond, a.KernelP50.Median)
	assert.Equal(t, 2, a.KernelP50.N)
	assert.Equal(t, 60*time.Microsecond, a.KernelP99.Max)
	assert.Empty(t, a.NoKernelStamps)

	a = median.Summarize([]*cache.RunResult{run(0), run(0)})
	assert.Nil(t, a.KernelP50)
	assert.Nil(t, a.KernelP99)
	assert.Equal(t, "closed-loop run", a.NoKernelStamps)
}
