package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
)

// E1's kernel-to-kernel RTT leads the paths table; a path without stamps
// says why; E3's rows say what their kernel view is.
func TestKernelViewText(t *testing.T) {
	sec := &PathsSection{Result: &srdexperiment.Result{Targets: []srdexperiment.TargetResult{{Target: srdexperiment.Target{Name: "same"}}, {Target: srdexperiment.Target{Name: "cross"}}}}}
	sec.keepKernel("same", &latency.PingPongResult{KernelRTT: &latency.Summary{P50: 12 * time.Microsecond, P99: 30 * time.Microsecond, Observations: 100}})
	sec.keepKernel("cross", &latency.PingPongResult{NoKernelStamps: "not linux (darwin)"})
	var b strings.Builder
	require.NoError(t, writePathsText(&b, sec))
	s := b.String()
	k := strings.Index(s, "RTT, kernel-to-kernel")
	require.GreaterOrEqual(t, k, 0, s)
	assert.Less(t, k, strings.Index(s, "1 flow (Gbit/s)"), "the kernel view leads")
	assert.Regexp(t, `same\s+\|?\s*12\.0\s+\|?\s*30\.0`, s)
	assert.Contains(t, s, "cross: no kernel stamps: not linux (darwin)")

	b.Reset()
	writeE3Kernel(&b, &CacheSection{Endpoints: []*CacheEndpoint{{Label: "local", Workloads: []*CacheWorkload{{
		Engine:  "resp",
		Pool:    &median.Result{KernelP50: &latency.Range[time.Duration]{Median: 20 * time.Microsecond}, KernelP99: &latency.Range[time.Duration]{Median: 90 * time.Microsecond}},
		Connect: &median.Result{NoKernelStamps: "connect-per-op run"},
	}}}}})
	assert.Contains(t, b.String(), "local resp pool: kernel-to-kernel p50 20.0 p99 90.0 us")
	assert.Contains(t, b.String(), "resp connect: no kernel stamps: connect-per-op run")
}
