package latencytest

import (
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/internal/benchhist"
)

// writeBenchHistogram writes h into the directory that
// NETPERFKIT_BENCH_HISTOGRAMS names, when it is
// set, for shard.MergeHistogramLogs.
func writeBenchHistogram(b *testing.B, h *hdrhistogram.Histogram) {
	if err := benchhist.Write(b.Name(), h); err != nil {
		b.Errorf("latencytest: %v", err)
	}
}
