package shard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHistogramLog writes h to path in the HdrHistogram log format, as
// one interval tagged with tag (a benchmark's name), so that the
// histograms of benchmarks run in several processes can be merged exactly
// by MergeHistogramLogs. It replaces the file. The error wraps ErrInvalid
// for a nil h or an empty path.
func WriteHistogramLog(path, tag string, h *hdrhistogram.Histogram) error {
	if h == nil || path == "" {
		return fmt.Errorf("%w: WriteHistogramLog: nil histogram or empty path", ErrInvalid)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	w := hdrhistogram.NewHistogramLogWriter(f)
	err = w.OutputLogFormatVersion()
	if err == nil {
		err = w.OutputLegend()
	}
	c := hdrhistogram.Import(h.Export())
	c.SetTag(tag)
	now := time.Now().UnixMilli()
	c.SetStartTimeMs(now)
	c.SetEndTimeMs(now)
	err = errors.Join(err, w.OutputIntervalHistogram(c), f.Close())
	if err != nil {
		return fmt.Errorf("shard: writing %s: %w", path, err)
	}
	return nil
}

// MergeHistogramLogs adds up every interval histogram in the HdrHistogram
// logs at paths (those WriteHistogramLog writes, or any other), and
// returns the sum and the values it could not hold (above its range of
// HistogramLowest..HistogramHighest), which are counted, never dropped
// silently. The error names the first file it could not read.
func MergeHistogramLogs(paths ...string) (h *hdrhistogram.Histogram, dropped int64, err error) {
	h = newHistogram()
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
	for {
		x, err := r.NextIntervalHistogram()
		if err != nil {
			return dropped, fmt.Errorf("%w histogram log %s: %w", ErrInvalid, path, err)
		}
		if x == nil {
			return dropped, nil
		}
		dropped += into.Merge(x)
	}
}

// BenchHistogramEnv names the environment variable that, when it holds a
// directory, makes latencytest's and cachetest's Benchmark helpers write
// their histograms there (WriteBenchHistogram), for MergeHistogramLogs.
const BenchHistogramEnv = "NETPERFKIT_BENCH_HISTOGRAMS"

// WriteBenchHistogram writes h as an HdrHistogram log named for the
// benchmark and this process (NAME-PID.hlog) into the directory
// BenchHistogramEnv names; it does nothing when the variable is unset or h
// is nil. Each call replaces the file, so it holds a benchmark's last run.
func WriteBenchHistogram(benchName string, h *hdrhistogram.Histogram) error {
	dir := os.Getenv(BenchHistogramEnv)
	if dir == "" || h == nil {
		return nil
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(benchName)
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.hlog", name, os.Getpid()))
	if err := WriteHistogramLog(path, benchName, h); err != nil {
		return fmt.Errorf("%s: %w", BenchHistogramEnv, err)
	}
	return nil
}
