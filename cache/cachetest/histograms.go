package cachetest

import (
	"fmt"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency/shard"
)

// HistogramDirEnv names the environment variable that, when it holds a
// directory, makes Benchmark write its histogram of the requests that succeeded there, one
// HdrHistogram log per benchmark and process (NAME-PID.hlog; each b.N round
// replaces the last, so the file holds the measured run). Benchmarks run
// in several processes, on one host or many, are then merged exactly with
// MergeHistograms:
//
//	NETPERFKIT_BENCH_HISTOGRAMS=/shared/h go test -run '^$' -bench Cache   # on each host
//	h, _, err := cachetest.MergeHistograms(files...)                    # afterwards
const HistogramDirEnv = shard.BenchHistogramEnv

// MergeHistograms adds up the histogram logs Benchmark wrote (or any
// HdrHistogram logs) into one histogram of latency/shard's settings (1 µs
// to 60 s at 3 significant figures), with the count of values it could not
// hold (above 60 s): percentiles of the sum, never an average of
// percentiles.
func MergeHistograms(paths ...string) (*hdrhistogram.Histogram, int64, error) {
	h, dropped, err := shard.MergeHistogramLogs(paths...)
	if err != nil {
		return h, dropped, fmt.Errorf("cachetest: %w", err)
	}
	return h, dropped, nil
}

// writeBenchHistogram writes h for HistogramDirEnv, when it is set.
func writeBenchHistogram(b *testing.B, h *hdrhistogram.Histogram) {
	if err := shard.WriteBenchHistogram(b.Name(), h); err != nil {
		b.Errorf("cachetest: %v", err)
	}
}
