package cachetest_test

import (
	"fmt"
	"path/filepath"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// Benchmarks run on several hosts with NETPERFKIT_BENCH_HISTOGRAMS set to
// a shared directory are merged into one distribution afterwards.
func ExampleMergeHistograms() {
	files, _ := filepath.Glob("/shared/histograms/BenchmarkCache-*.hlog")
	h, dropped, err := cachetest.MergeHistograms(files...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d requests, p99 %d ns, %d above 60 s\n", h.TotalCount(), h.ValueAtQuantile(99), dropped)
}
