package latency

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func us(v ...float64) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x * 1000)
	}
	return d
}

func TestSummarizeSamplesByHand(t *testing.T) {
	s := summarizeSamples(us(4, 1, 3, 2), 0)
	assert.Equal(t, int64(4), s.Observations)
	assert.InDelta(t, 1.0, usOf(s.Min), 1e-12)
	assert.InDelta(t, 4.0, usOf(s.Max), 1e-12)
	assert.InDelta(t, 2.5, usOf(s.Avg), 1e-12)
	assert.InDelta(t, math.Sqrt(5.0/3), usOf(s.StdDev), halfNs)
	assert.InDelta(t, 1.0, usOf(s.meanAD), 1e-12)
	assert.InDelta(t, 1.48260221851, usOf(s.medianAD), halfNs) // median(|x-2.5|) = mean(0.5..1.5 middle) = 1
	assert.InDelta(t, 1.0, usOf(s.P25), 1e-12)                 // index int(0.5+1)-1 = 0
	assert.InDelta(t, 2.0, usOf(s.P50), 1e-12)                 // index int(2.5)-1 = 1
	assert.InDelta(t, 3.0, usOf(s.P75), 1e-12)
	assert.InDelta(t, 4.0, usOf(s.P90), 1e-12)
	assert.InDelta(t, 4.0, usOf(s.P99999), 1e-12)
	assert.InDelta(t, 1.0, usOf(s.siqr), 1e-12)
	assert.InDelta(t, math.Sqrt(5.0/3)/2.5, s.cv, 1e-12)
	assert.Equal(t, 99.0, s.CILevel)
}

// goldenSamples is a fixed, skewed data set whose statistics were computed
// independently (Python, from the definitions in sockperf's sources).
func goldenSamples() []time.Duration {
	var d []time.Duration
	for i := 1; i <= 1001; i++ {
		d = append(d, time.Duration((i*7919)%5003*13+2000))
	}
	return append(d, 250*time.Microsecond)
}

func TestSummarizeSamplesGolden(t *testing.T) {
	in := goldenSamples()
	orig := append([]time.Duration(nil), in...)
	s := summarizeSamples(in, 0)
	require.Equal(t, orig, in, "samples must not be modified")
	const eps = 1e-9 // exact: a value in whole nanoseconds
	assert.Equal(t, int64(1002), s.Observations)
	assert.InDelta(t, 2.065, usOf(s.Min), eps)
	assert.InDelta(t, 250.0, usOf(s.Max), eps)
	assert.InDelta(t, 34.83212175648701, usOf(s.Avg), halfNs)
	assert.InDelta(t, 19.951146041938532, usOf(s.StdDev), halfNs)
	assert.InDelta(t, 16.44318635782328, usOf(s.meanAD), halfNs)
	assert.InDelta(t, 24.082649136367188, usOf(s.medianAD), halfNs)
	assert.InDelta(t, 16.2435, usOf(s.siqr), halfNs)
	assert.InDelta(t, 0.572780095953325, s.cv, eps)
	assert.InDelta(t, 0.6302806683889883, usOf(s.stdError), halfNs)
	assert.InDelta(t, 33.20862634139027, usOf(s.CILow), halfNs)
	assert.InDelta(t, 36.455617171583754, usOf(s.CIHigh), halfNs)
	want := []float64{18.341, 34.552, 50.828, 60.63, 66.428, 67.026, 250, 250}
	got := []float64{usOf(s.P25), usOf(s.P50), usOf(s.P75), usOf(s.P90), usOf(s.P99), usOf(s.P999), usOf(s.P9999), usOf(s.P99999)}
	assert.InDeltaSlice(t, want, got, eps)
}

func TestPublishedConfidenceInterval(t *testing.T) {
	// sockperf's documentation: n=105413, std-dev 422.741 -> std-error 1.302,
	// 99% confidence interval avg +/- 3.354.
	f := stats{n: 105413, avg: 1000, stdDev: 422.741}
	s := f.summary(99)
	assert.InDelta(t, 1.302, usOf(s.stdError), 0.0005)
	assert.InDelta(t, 3.354, usOf(s.CIHigh)-usOf(s.Avg), 0.0005)
	assert.InDelta(t, 3.354, usOf(s.Avg)-usOf(s.CILow), 0.0005)
	assert.InDelta(t, 1.959964, zScore(95), 1e-6)
	assert.InDelta(t, 2.575829, zScore(99), 1e-6)
}

func TestSummaryCILevel(t *testing.T) {
	d := goldenSamples()
	s95 := summarizeSamples(d, 95)
	s99 := summarizeSamples(d, 0)
	assert.Equal(t, 95.0, s95.CILevel)
	assert.Less(t, usOf(s95.CIHigh)-usOf(s95.CILow), usOf(s99.CIHigh)-usOf(s99.CILow))
	bad := summarizeSamples(d, 100)
	assert.Equal(t, defaultCILevel, bad.CILevel, "an impossible level falls back to the default and says so")
}

func TestSummarizeEmpty(t *testing.T) {
	for _, s := range []Summary{
		summarizeSamples(nil, 0),
		SummarizeHistogram(hdrhistogram.New(1, 1e9, 3), 0),
		SummarizeHistogram(nil, 0),
	} {
		assert.Equal(t, int64(0), s.Observations)
		_, err := json.Marshal(s)
		require.NoError(t, err, "an empty summary must be valid JSON (no NaN)")
	}
	one := summarizeSamples(us(7), 0)
	assert.Equal(t, 0.0, usOf(one.StdDev))
	assert.Equal(t, 7.0, usOf(one.P99999))
	assert.Equal(t, 7.0, usOf(one.P25))
	_, err := json.Marshal(one)
	require.NoError(t, err)
}

func TestSummarizeHistogramMatchesSamples(t *testing.T) {
	d := goldenSamples()
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for _, v := range d {
		require.NoError(t, h.RecordValue(int64(v)))
	}
	exact := summarizeSamples(d, 0)
	approx := SummarizeHistogram(h, 0)
	assert.Equal(t, exact.Observations, approx.Observations)
	rel := func(name string, want, got float64) {
		t.Helper()
		assert.InEpsilon(t, want, got, 0.002, name)
	}
	rel("min", usOf(exact.Min), usOf(approx.Min))
	rel("max", usOf(exact.Max), usOf(approx.Max))
	rel("avg", usOf(exact.Avg), usOf(approx.Avg))
	rel("stddev", usOf(exact.StdDev), usOf(approx.StdDev))
	rel("mean-ad", usOf(exact.meanAD), usOf(approx.meanAD))
	rel("median-ad", usOf(exact.medianAD), usOf(approx.medianAD))
	rel("p25", usOf(exact.P25), usOf(approx.P25))
	rel("p50", usOf(exact.P50), usOf(approx.P50))
	rel("p90", usOf(exact.P90), usOf(approx.P90))
	rel("p99", usOf(exact.P99), usOf(approx.P99))
	rel("p999", usOf(exact.P999), usOf(approx.P999))
	rel("p99999", usOf(exact.P99999), usOf(approx.P99999))
	rel("ci_low", usOf(exact.CILow), usOf(approx.CILow))
}

func TestSummarizeHistogramExactBelow2048ns(t *testing.T) {
	// At 3 significant figures and 1 ns resolution, values below 2048 ns have
	// buckets of width 1, so the histogram gives the exact statistics.
	d := []time.Duration{100, 200, 300, 400, 1000, 1500, 2000}
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for _, v := range d {
		require.NoError(t, h.RecordValue(int64(v)))
	}
	assert.InDelta(t, 0, diffSummary(summarizeSamples(d, 0), SummarizeHistogram(h, 0)), 1e-9)
}

func diffSummary(a, b Summary) float64 {
	pa := []float64{usOf(a.Min), usOf(a.Max), usOf(a.Avg), usOf(a.StdDev), usOf(a.meanAD), usOf(a.medianAD), usOf(a.siqr), a.cv, usOf(a.stdError), usOf(a.CILow), usOf(a.CIHigh), usOf(a.P25), usOf(a.P50), usOf(a.P75), usOf(a.P90), usOf(a.P99), usOf(a.P999), usOf(a.P9999), usOf(a.P99999)}
	pb := []float64{usOf(b.Min), usOf(b.Max), usOf(b.Avg), usOf(b.StdDev), usOf(b.meanAD), usOf(b.medianAD), usOf(b.siqr), b.cv, usOf(b.stdError), usOf(b.CILow), usOf(b.CIHigh), usOf(b.P25), usOf(b.P50), usOf(b.P75), usOf(b.P90), usOf(b.P99), usOf(b.P999), usOf(b.P9999), usOf(b.P99999)}
	var m float64
	for i := range pa {
		m = max(m, math.Abs(pa[i]-pb[i]))
	}
	return m
}

func TestSummaryJSONKeys(t *testing.T) {
	b, err := json.Marshal(summarizeSamples(goldenSamples(), 0))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"observations", "dropped", "duplicated", "out_of_order", "min_us", "max_us", "avg_us",
		"stddev_us", "mean_ad_us", "median_ad_us", "siqr_us", "cv", "std_error_us", "ci_level", "ci_low_us", "ci_high_us",
		"p25_us", "p50_us", "p75_us", "p90_us", "p99_us", "p999_us", "p9999_us", "p99999_us"} {
		assert.Contains(t, m, k)
	}
	assert.Len(t, m, 24)
}

func TestSummaryWriteText(t *testing.T) {
	s := summarizeSamples(us(4, 1, 3, 2), 0)
	s.Dropped = 2
	var b strings.Builder
	require.NoError(t, s.WriteText(&b, "Round trip"))
	out := b.String()
	assert.Contains(t, out, "sockperf: Summary: Round trip is 2.500 usec")
	assert.Contains(t, out, "# dropped messages = 2;")
	assert.Contains(t, out, "sockperf: ---> percentile 50.000 =    2.000")
	assert.Contains(t, out, "sockperf: ---> <MIN> observation =    1.000")
	assert.Contains(t, out, "99.0% ci=[")
	assert.Contains(t, out, "====> avg-rtt=2.500 (std-dev=1.291")
}

// Spread statistics from a histogram are accurate to a bucket width, not
// to 0.1% of themselves: 1,000 values within 50 ns of 100 us, in buckets
// 64 ns wide, keep their location to 0.1% but lose most of their spread.
func TestSummarizeHistogramSpreadPrecision(t *testing.T) {
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	var d []time.Duration
	for i := range 1000 {
		v := 100*time.Microsecond + time.Duration(i%50)
		d = append(d, v)
		require.NoError(t, h.RecordValue(int64(v)))
	}
	const width = 0.064 // us: buckets of 64 ns from 65,536 ns to 131,071 ns
	exact, approx := summarizeSamples(d, 0), SummarizeHistogram(h, 0)
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"min", usOf(exact.Min), usOf(approx.Min)}, {"max", usOf(exact.Max), usOf(approx.Max)}, {"avg", usOf(exact.Avg), usOf(approx.Avg)},
		{"p50", usOf(exact.P50), usOf(approx.P50)}, {"p99", usOf(exact.P99), usOf(approx.P99)}, {"ci_low", usOf(exact.CILow), usOf(approx.CILow)}} {
		assert.InEpsilon(t, c.want, c.got, 0.001, c.name)
	}
	for _, c := range []struct {
		name      string
		want, got float64
		bound     float64
	}{
		{"stddev", usOf(exact.StdDev), usOf(approx.StdDev), width / 2},
		{"siqr", usOf(exact.siqr), usOf(approx.siqr), width / 2},
		{"mean-ad", usOf(exact.meanAD), usOf(approx.meanAD), width},
		{"median-ad", usOf(exact.medianAD), usOf(approx.medianAD), 1.5 * width},
		{"std-error", usOf(exact.stdError), usOf(approx.stdError), width / 2 / math.Sqrt(1000)},
		{"ci half-width", usOf(exact.CIHigh) - usOf(exact.Avg), usOf(approx.CIHigh) - usOf(approx.Avg), zScore(exact.CILevel) * width / 2 / math.Sqrt(1000)},
	} {
		assert.InDelta(t, c.want, c.got, c.bound, c.name)
	}
	assert.Greater(t, math.Abs(usOf(approx.StdDev)-usOf(exact.StdDev)), 0.001*usOf(exact.StdDev), "not within 0.1%")
}

// halfNs, in microseconds, is how far a statistic rounded to the nearest
// nanosecond may be from its exact value.
const halfNs = 0.0005 + 1e-9

// usOf converts d to float microseconds, the unit sockperf prints.
func usOf(d time.Duration) float64 { return float64(d) / 1e3 }
