package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/netperfkit/netperfkit/latency/shard"
)

// mergeOutput is the JSON form of cachebench merge: the merge with its
// durations in the units the JSON of every tool uses.
type mergeOutput struct {
	*shard.Merged
	WindowSeconds float64   `json:"window_seconds"`
	StartSkewUs   float64   `json:"start_skew_us"`
	Rows          []rowJSON `json:"rows"`
	Complete      bool      `json:"complete"`
	Error         string    `json:"error,omitempty"`
}

type rowJSON struct {
	shard.Row
	SkewUs   float64 `json:"skew_us"`
	CPUCores float64 `json:"cpu_cores,omitempty"`
	CPULimit float64 `json:"cpu_limit_cores,omitempty"`
}

// runMerge is `cachebench merge [-json] FILE|DIR...`: one result from the
// shards' -out files (cachebench's or pingpong's; a directory stands for
// every *.json file in it). It exits 1 when a shard
// is missing, failed or unreadable, after printing what it merged.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cachebench merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuShare := fs.Float64("cpu-share", 0.9, "a shard that used this share of its CPU limit is saturated")
	lateShare := fs.Float64("late-share", 0.1, "an open-loop shard whose send lateness p99 is this share of its response p99 is saturated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "cachebench merge: no files: give every shard's -out file")
		return 2
	}
	files, err := expandDirs(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "cachebench merge:", err)
		return 2
	}
	m, err := shard.MergeFiles(files, &shard.Config{CPUShare: *cpuShare, LatenessShare: *lateShare})
	if err != nil && !errors.Is(err, shard.ErrIncomplete) && !errors.Is(err, shard.ErrNoWindow) {
		fmt.Fprintln(stderr, "cachebench merge:", err)
		return 1
	}
	if *asJSON {
		out := mergeOutput{Merged: m, WindowSeconds: m.Window.Seconds(), StartSkewUs: us(m.StartSkew), Complete: err == nil}
		for _, r := range m.Rows {
			rj := rowJSON{Row: r, SkewUs: us(r.Skew)}
			if r.CPU != nil {
				rj.CPUCores, rj.CPULimit = r.CPU.UsedCores(), r.CPU.LimitCores
			}
			out.Rows = append(out.Rows, rj)
		}
		if err != nil {
			out.Error = err.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(out); e != nil {
			fmt.Fprintln(stderr, "cachebench merge:", e)
			return 1
		}
	} else {
		printMerge(stdout, m)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cachebench merge:", err)
		return 1
	}
	return 0
}

func printMerge(w io.Writer, m *shard.Merged) {
	if m.Intervals > 0 {
		printWindow(w, m)
	}
	printGaps(w, m)
}

// printWindow prints the merge over the common window, a row per shard.
func printWindow(w io.Writer, m *shard.Merged) {
	fmt.Fprintf(w, "%s: %d shards, common window %s .. %s (%d intervals, %v), start skew %v\n",
		m.Tool, m.Shards, m.WindowStart.Format(time.RFC3339Nano), m.WindowEnd.Format(time.RFC3339Nano),
		m.Intervals, m.Window, m.StartSkew.Round(time.Microsecond))
	fmt.Fprintf(w, "merged: %d operations, %d errors, %.0f ops/s, p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us (percentiles of the merged histograms)\n",
		m.Count, m.Errors, m.OpsPerSec, us(m.Latency.P50), us(m.Latency.P99), us(m.Latency.P999), us(m.Latency.Max))
	if m.OutOfRange > 0 {
		highest := time.Duration(m.Histogram.HighestTrackableValue()) // the shards' histograms' bound
		fmt.Fprintf(w, "OUT OF RANGE: %d operations took longer than %v, counted as %v\n", m.OutOfRange, highest, highest)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shard\thost\tskew us\tcount\terrors\tops/s\tp50 us\tp99 us\tCPU cores\tlimit\tgenerator\t")
	for _, r := range m.Rows {
		cores, limit := "?", "?"
		if r.CPU != nil {
			cores, limit = fmt.Sprintf("%.2f", r.CPU.UsedCores()), fmt.Sprintf("%.2f", r.CPU.LimitCores)
		}
		word := "ok"
		if r.Saturated {
			word = "SATURATED"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%d\t%d\t%.0f\t%.0f\t%.0f\t%s\t%s\t%s\t\n", r.Shard, r.Host, us(r.Skew), r.Count, r.Errors,
			r.OpsPerSec, us(r.Latency.P50), us(r.Latency.P99), cores, limit, word)
	}
	tw.Flush()
	for _, r := range m.Rows {
		if r.Saturated {
			fmt.Fprintf(w, "SATURATED shard %d: %s: its rate is the generator's limit, not the server's\n", r.Shard, r.Reason)
		}
	}
}

// printGaps names the shards left out of the merge.
func printGaps(w io.Writer, m *shard.Merged) {
	for _, s := range m.Missing {
		fmt.Fprintf(w, "MISSING shard %d: no result file\n", s)
	}
	for _, f := range m.Failed {
		fmt.Fprintf(w, "FAILED shard %d (%s): %s\n", f.Shard, f.Host, f.Error)
	}
	for _, f := range m.Unreadable {
		fmt.Fprintf(w, "UNREADABLE %s: %s\n", f.Path, f.Error)
	}
}

// expandDirs replaces each directory among paths by the *.json files in it.
func expandDirs(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			out = append(out, p) // MergeFiles names a file it cannot read
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no *.json shard files", p)
		}
		out = append(out, m...)
	}
	return out, nil
}
