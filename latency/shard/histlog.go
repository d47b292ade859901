package shard

import (
	"fmt"
	"io"
	"os"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// MergeHistogramLogs adds up every interval histogram in the HdrHistogram
// logs at paths (those the Benchmark helpers write, or any other) and
// returns the sum, in this package's settings (1 µs to 60 s at 3
// significant figures: percentiles of the sum, never an average of
// percentiles), and the values it could not hold (above 60 s), which are
// counted, never dropped silently. No paths, or a file that holds no
// interval histogram (an empty file, a shard's .json), is an error
// wrapping ErrInvalid; the error names the first file it could not use.
//
// The environment variable NETPERFKIT_BENCH_HISTOGRAMS, when it holds a
// directory, makes latencytest's and cachetest's Benchmark write their
// histograms there, one HdrHistogram log per benchmark and process
// (NAME-PID.hlog; each b.N round replaces the last, so the file holds the
// measured run), for MergeHistogramLogs:
//
//	NETPERFKIT_BENCH_HISTOGRAMS=/shared/h go test -run '^$' -bench RTT   # on each host
//	h, _, err := shard.MergeHistogramLogs(files...)                       # afterwards
func MergeHistogramLogs(paths ...string) (h *hdrhistogram.Histogram, dropped int64, err error) {
	h = newHistogram()
	if len(paths) == 0 {
		return h, 0, fmt.Errorf("%w MergeHistogramLogs: no paths", ErrInvalid)
	}
	for _, p := range paths {
		d, err := mergeLog(h, p)
		dropped += d
		if err != nil {
			return h, dropped, err
		}
	}
	return h, dropped, nil
}

func mergeLog(into *hdrhistogram.Histogram, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("shard: %w", err)
	}
	defer f.Close()
	r := hdrhistogram.NewHistogramLogReader(io.LimitReader(f, maxResultBytes))
	var dropped int64
	for n := 0; ; n++ {
		x, err := r.NextIntervalHistogram()
		if err != nil {
			return dropped, fmt.Errorf("%w histogram log %s: %w", ErrInvalid, path, err)
		}
		if x == nil && n == 0 {
			return dropped, fmt.Errorf("%w histogram log %s: holds no interval histogram (not an HdrHistogram log)", ErrInvalid, path)
		}
		if x == nil {
			return dropped, nil
		}
		dropped += into.Merge(x)
	}
}
