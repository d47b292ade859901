package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"golang.org/x/perf/benchmath"
)

// compareAlpha is the significance level of every comparison of runs, as
// benchstat's default.
const compareAlpha = 0.05

// defaultRuns is -runs' default: the fewest runs a side with which the
// Mann-Whitney U test can tell two workloads apart at compareAlpha. With n
// runs a side the smallest two-sided p it can give is 2/C(2n,n), reached
// when every run of one side is below every run of the other: 0.100 for 3
// (so 3 runs can never show a change), 0.029 for 4. benchmath warns below
// the same n ("need >= 4 samples to detect a difference at alpha level
// 0.05").
const defaultRuns = 4

// tooFewMark flags a comparison whose runs are too few to show a change,
// as benchstat footnotes its warnings.
const tooFewMark = "¹"

// RunTest is benchstat's comparison of two sets of runs: the Mann-Whitney
// U test of golang.org/x/perf/benchmath (no assumption on the
// distribution) at alpha 0.05, and the change of the medians.
type RunTest struct {
	// Text is benchstat's notation: "+12.34% (p=0.008 n=6)" for a change,
	// "~ (p=0.400 n=3)" when the runs cannot tell the two apart.
	Text string `json:"text"`
	// Delta is the change of the median, "~" when not significant.
	Delta string `json:"delta"`
	// P is the U test's p-value.
	P float64 `json:"p"`
	// NOld and NNew count the runs of each side.
	NOld int `json:"n_old"`
	NNew int `json:"n_new"`
	// Significant is P < alpha: the runs differ.
	Significant bool `json:"significant"`
	// OldMedian and NewMedian are benchmath's centers of each side.
	OldMedian float64 `json:"old_median"`
	NewMedian float64 `json:"new_median"`
	// TooFew is set when so few runs could not show a change whatever they
	// measured: benchmath's warning (for example "need >= 4 samples to
	// detect a difference at alpha level 0.05").
	TooFew string `json:"too_few,omitempty"`
}

// compareRuns tests new against old. It returns nil when either side has
// no run.
func compareRuns(oldRuns, newRuns []float64) *RunTest {
	if len(oldRuns) == 0 || len(newRuns) == 0 {
		return nil
	}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = compareAlpha
	// NewSample sorts in place: keep the caller's order.
	so := benchmath.NewSample(slices.Clone(oldRuns), &th)
	sn := benchmath.NewSample(slices.Clone(newRuns), &th)
	c := benchmath.AssumeNothing.Compare(so, sn)
	oc := benchmath.AssumeNothing.Summary(so, 0.95).Center
	nc := benchmath.AssumeNothing.Summary(sn, 0.95).Center
	t := &RunTest{
		Delta: c.FormatDelta(oc, nc), P: c.P, NOld: c.N1, NNew: c.N2,
		Significant: c.P <= c.Alpha, OldMedian: oc, NewMedian: nc,
	}
	t.Text = fmt.Sprintf("%s (%s)", t.Delta, c)
	for _, w := range c.Warnings {
		if strings.HasPrefix(w.Error(), "need ") {
			t.TooFew = w.Error()
		}
	}
	return t
}

// cell is the table cell: benchstat's notation, flagged when the runs were
// too few to tell.
func (t *RunTest) cell() string {
	switch {
	case t == nil:
		return "-"
	case t.TooFew != "":
		return t.Text + " " + tooFewMark
	}
	return t.Text
}

// tooFewNote is the footnote of a table with flagged cells, or "".
func tooFewNote(tests ...*RunTest) string {
	for _, t := range tests {
		if t != nil && t.TooFew != "" {
			return fmt.Sprintf("%s too few runs to tell a change: %s (raise -runs)", tooFewMark, t.TooFew)
		}
	}
	return ""
}

// Accessors of a cache run's figures, in one place: the samples the U test
// compares are these per run.
func runP50Us(r *cache.RunResult) float64 { return microseconds(r.Latency.P50) }
func runP99Us(r *cache.RunResult) float64 { return microseconds(r.Latency.P99) }
func runOps(r *cache.RunResult) float64   { return r.OpsPerSec }

// microseconds is d in the unit of the report's tables and report.json.
func microseconds(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// runValues lists f of every run of a (nil a: none).
func runValues(a *median.Result, f func(*cache.RunResult) float64) []float64 {
	if a == nil {
		return nil
	}
	out := make([]float64, 0, len(a.Results))
	for _, r := range a.Results {
		if r != nil {
			out = append(out, f(r))
		}
	}
	return out
}

// latencyValues is runValues of the runs whose latencies describe
// operations: a run most of whose attempts failed (runFailed) measured its
// errors, which no test may compare.
func latencyValues(a *median.Result, f func(*cache.RunResult) float64) []float64 {
	if a == nil {
		return nil
	}
	var out []float64
	for _, r := range a.Results {
		if r != nil && !runFailed(r) {
			out = append(out, f(r))
		}
	}
	return out
}

// cacheRatio is one row of E3's ratios: the ratio of the medians
// (median.Compare) and the U test of each figure's runs, other against base.
func cacheRatio(kind, baseLabel string, base *median.Result, otherLabel string, other *median.Result) CacheComparison {
	return CacheComparison{
		Kind:       kind,
		Comparison: median.Compare(baseLabel, base, otherLabel, other),
		P50Test:    compareRuns(latencyValues(base, runP50Us), latencyValues(other, runP50Us)),
		P99Test:    compareRuns(latencyValues(base, runP99Us), latencyValues(other, runP99Us)),
		OpsTest:    compareRuns(runValues(base, runOps), runValues(other, runOps)),
	}
}
