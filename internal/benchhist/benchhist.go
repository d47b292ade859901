// Package benchhist writes a benchmark's latency histogram as an
// HdrHistogram log into the directory NETPERFKIT_BENCH_HISTOGRAMS names:
// the one writer behind latencytest's and cachetest's Benchmark (issue
// 44: one copy of the histogram-directory helpers). latency/shard's
// MergeHistogramLogs reads what it writes; Env is NETPERFKIT_BENCH_HISTOGRAMS.
package benchhist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Env names the environment variable that, when it holds a directory,
// makes the Benchmark helpers write their histograms there.
const Env = "NETPERFKIT_BENCH_HISTOGRAMS"

// Write writes h as an HdrHistogram log named for the benchmark and this
// process (NAME-PID.hlog) into the directory Env names; it does nothing
// when the variable is unset or h is nil. Each call replaces the file, so
// it holds a benchmark's last run.
func Write(benchName string, h *hdrhistogram.Histogram) error {
	dir := os.Getenv(Env)
	if dir == "" || h == nil {
		return nil
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(benchName)
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.hlog", name, os.Getpid()))
	if err := WriteLog(path, benchName, h); err != nil {
		return fmt.Errorf("%s: %w", Env, err)
	}
	return nil
}

// WriteLog writes h to path in the HdrHistogram log format, as one
// interval tagged with tag, replacing the file.
func WriteLog(path, tag string, h *hdrhistogram.Histogram) error {
	if h == nil || path == "" {
		return errors.New("benchhist: nil histogram or empty path")
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("benchhist: %w", err)
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
		return fmt.Errorf("benchhist: writing %s: %w", path, err)
	}
	return nil
}
