package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompareRunsNotation pins benchstat's notation and benchmath's U test
// on samples whose p-values are known exactly.
func TestCompareRunsNotation(t *testing.T) {
	six := compareRuns([]float64{1, 2, 3, 4, 5, 6}, []float64{12, 11, 10, 9, 8, 7})
	require.NotNil(t, six)
	assert.Equal(t, "+171.43% (p=0.002 n=6)", six.Text, "disjoint samples of 6: the smallest two-sided p, 2/C(12,6)")
	assert.True(t, six.Significant)
	assert.Empty(t, six.TooFew)
	assert.Equal(t, 3.5, six.OldMedian)
	assert.Equal(t, 9.5, six.NewMedian)

	three := compareRuns([]float64{1, 2, 3}, []float64{4, 5, 6})
	assert.Equal(t, "~ (p=0.100 n=3)", three.Text, "3 runs a side can never reach p < 0.05")
	assert.False(t, three.Significant)
	assert.Equal(t, "need >= 4 samples to detect a difference at alpha level 0.05", three.TooFew)
	assert.Equal(t, "~ (p=0.100 n=3) "+tooFewMark, three.cell())

	overlap := compareRuns([]float64{1, 2, 3, 4}, []float64{1.5, 2.5, 3.5, 4.5})
	assert.Equal(t, "~ (p=0.686 n=4)", overlap.Text)
	assert.Empty(t, overlap.TooFew, "4 runs a side could have shown a change")

	down := compareRuns([]float64{10, 11, 12, 13}, []float64{5, 6, 7, 8})
	assert.Equal(t, "-43.48% (p=0.029 n=4)", down.Text)

	uneven := compareRuns([]float64{7}, []float64{1, 2, 3})
	assert.Equal(t, "~ (p=0.500 n=1+3)", uneven.Text)

	assert.Nil(t, compareRuns(nil, []float64{1}))
	assert.Equal(t, "-", (*RunTest)(nil).cell())
	assert.Empty(t, tooFewNote(six, nil))
	assert.Contains(t, tooFewNote(six, three), "too few runs to tell a change: need >= 4 samples")
}

func TestCompareRunsKeepsOrder(t *testing.T) {
	in := []float64{3, 1, 2}
	compareRuns(in, []float64{5, 4})
	assert.Equal(t, []float64{3, 1, 2}, in, "the caller's slice is not sorted in place")
}

func aggOf(mode cache.ConnMode, p50s, ops []float64) *median.Result {
	var runs []*cache.RunResult
	for i := range p50s {
		runs = append(runs, &cache.RunResult{Engine: "resp", Mode: mode, OpsPerSec: ops[i], Attempts: 100, Succeeded: 100,
			Latency: latency.Summary{Observations: 100, P50: time.Duration(p50s[i] * 1e3), P99: time.Duration(2 * p50s[i] * 1e3)}})
	}
	return median.Summarize(runs)
}

// TestCacheRatioTests checks that E3's ratio rows carry the U test of the
// runs beside the ratio of medians, and that the text table prints it.
func TestCacheRatioTests(t *testing.T) {
	pool := aggOf(cache.Pooled, []float64{100, 101, 102, 103, 104, 105}, []float64{9000, 9100, 9200, 9300, 9400, 9500})
	conn := aggOf(cache.ConnectPerOp, []float64{200, 210, 220, 230, 240, 250}, []float64{3000, 3100, 3200, 3300, 3400, 3500})
	c := cacheRatio("connect/pool", "a pool", pool, "a connect", conn)
	assert.InDelta(t, 225.0/102.5, c.P50Ratio, 1e-9)
	require.NotNil(t, c.P50Test)
	assert.Equal(t, "+119.51% (p=0.002 n=6)", c.P50Test.Text)
	assert.Equal(t, "-64.86% (p=0.002 n=6)", c.OpsTest.Text)
	assert.Equal(t, "+119.51% (p=0.002 n=6)", c.P99Test.Text, "p99 doubles with p50 here")

	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, &CacheSection{Endpoints: []*CacheEndpoint{{Label: "a"}}, Comparisons: []CacheComparison{c}}))
	out := b.String()
	assert.Contains(t, out, "p50 vs base")
	assert.Contains(t, out, "+119.51% (p=0.002 n=6)")
	assert.Contains(t, out, "-64.86% (p=0.002 n=6)")
	assert.NotContains(t, out, "too few runs")

	few := cacheRatio("connect/pool", "a pool", aggOf(cache.Pooled, []float64{1, 2}, []float64{5, 6}), "a connect", aggOf(cache.ConnectPerOp, []float64{3, 4}, []float64{1, 2}))
	b.Reset()
	require.NoError(t, writeCacheText(&b, &CacheSection{Endpoints: []*CacheEndpoint{{Label: "a"}}, Comparisons: []CacheComparison{few}}))
	assert.Contains(t, b.String(), "~ (p=0.333 n=2) "+tooFewMark)
	assert.Contains(t, b.String(), tooFewMark+" too few runs to tell a change: need >= 4 samples")
}

func TestVerdict(t *testing.T) {
	r := func(n int) latency.Range[float64] { return latency.Range[float64]{N: n} }
	up := compareRuns([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8})
	down := compareRuns([]float64{5, 6, 7, 8}, []float64{1, 2, 3, 4})
	same := compareRuns([]float64{1, 2, 3, 4}, []float64{1.5, 2.5, 3.5, 4.5})
	assert.Equal(t, "better", verdict(r(4), r(4), up, true))
	assert.Equal(t, "worse", verdict(r(4), r(4), up, false), "higher latency is worse")
	assert.Equal(t, "worse", verdict(r(4), r(4), down, true))
	assert.Equal(t, "better", verdict(r(4), r(4), down, false))
	assert.Equal(t, "~", verdict(r(4), r(4), same, true), "overlapping samples the test cannot tell apart")
	assert.Equal(t, "~", verdict(r(3), r(3), compareRuns([]float64{1, 2, 3}, []float64{7, 8, 9}), true),
		"disjoint ranges of 3 runs are not a change: p=0.1 (the old range rule called this better)")
	assert.Equal(t, "n=1", verdict(r(1), r(4), nil, true), "one repetition: no test")
}

// TestDefaultRunsCanShowADifference pins that the default -runs gives the U
// test enough runs a side to show a change at alpha 0.05, and that it is the
// fewest that can: one run fewer a side never reaches p < 0.05, however far
// apart the runs are.
func TestDefaultRunsCanShowADifference(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	n := o.runs
	require.Equal(t, defaultRuns, n)

	// The most different two samples of n runs can be: every run of one side
	// below every run of the other.
	disjoint := func(n int) (base, other []float64) {
		for i := range n {
			base = append(base, 100+float64(i))
			other = append(other, 200+float64(i))
		}
		return base, other
	}
	base, other := disjoint(n)
	got := compareRuns(base, other)
	require.NotNil(t, got)
	assert.Less(t, got.P, compareAlpha, "at the default -runs %d the U test can reach p < 0.05", n)
	assert.True(t, got.Significant)
	assert.Empty(t, got.TooFew, "benchmath does not warn of too few runs at the default")
	assert.NotContains(t, got.Text, "~")

	base, other = disjoint(n - 1)
	fewer := compareRuns(base, other)
	assert.GreaterOrEqual(t, fewer.P, compareAlpha, "%d runs a side can never show a change", n-1)
	assert.False(t, fewer.Significant)
	assert.NotEmpty(t, fewer.TooFew, "benchmath warns of too few runs below the default")

	for _, bad := range []string{"0", "-2"} {
		_, err := parseFlags([]string{"-runs", bad}, io.Discard)
		assert.ErrorContains(t, err, "-runs", "-runs %s is refused", bad)
	}
}
