package median

import (
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
)

// summarizeKernel fills in a's kernel view from the runs (those in which
// an operation succeeded) that have one, or the reason none has.
func summarizeKernel(a *Result, runs []*cache.RunResult) {
	var with []*cache.RunResult
	for _, r := range runs {
		if r.Kernel != nil {
			with = append(with, r)
		} else if a.NoKernelStamps == "" {
			a.NoKernelStamps = r.NoKernelStamps
		}
	}
	if len(with) == 0 {
		return
	}
	a.NoKernelStamps = ""
	p50 := latency.AggregateFunc(with, func(r *cache.RunResult) time.Duration { return r.Kernel.Response.P50 })
	p99 := latency.AggregateFunc(with, func(r *cache.RunResult) time.Duration { return r.Kernel.Response.P99 })
	a.KernelP50, a.KernelP99 = &p50, &p99
}
