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
	s := SummarizeSamples(us(4, 1, 3, 2), nil)
	assert.Equal(t, int64(4), s.Observations)
	assert.InDelta(t, 1.0, s.MinUs, 1e-12)
	assert.InDelta(t, 4.0, s.MaxUs, 1e-12)
	assert.InDelta(t, 2.5, s.AvgUs, 1e-12)
	assert.InDelta(t, math.Sqrt(5.0/3), s.StdDevUs, 1e-12)
	assert.InDelta(t, 1.0, s.MeanADUs, 1e-12)
	assert.InDelta(t, 1.48260221851, s.MedianADUs, 1e-12) // median(|x-2.5|) = mean(0.5..1.5 middle) = 1
	assert.InDelta(t, 1.0, s.P25Us, 1e-12)                // index int(0.5+1)-1 = 0
	assert.InDelta(t, 2.0, s.P50Us, 1e-12)                // index int(2.5)-1 = 1
	assert.InDelta(t, 3.0, s.P75Us, 1e-12)
	assert.InDelta(t, 4.0, s.P90Us, 1e-12)
	assert.InDelta(t, 4.0, s.P99999Us, 1e-12)
	assert.InDelta(t, 1.0, s.SIQRUs, 1e-12)
	assert.InDelta(t, math.Sqrt(5.0/3)/2.5, s.CV, 1e-12)
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
	s := SummarizeSamples(in, nil)
	require.Equal(t, orig, in, "samples must not be modified")
	const eps = 1e-9
	assert.Equal(t, int64(1002), s.Observations)
	assert.InDelta(t, 2.065, s.MinUs, eps)
	assert.InDelta(t, 250.0, s.MaxUs, eps)
	assert.InDelta(t, 34.83212175648701, s.AvgUs, eps)
	assert.InDelta(t, 19.951146041938532, s.StdDevUs, eps)
	assert.InDelta(t, 16.44318635782328, s.MeanADUs, eps)
	assert.InDelta(t, 24.082649136367188, s.MedianADUs, eps)
	assert.InDelta(t, 16.2435, s.SIQRUs, eps)
	assert.InDelta(t, 0.572780095953325, s.CV, eps)
	assert.InDelta(t, 0.6302806683889883, s.StdErrorUs, eps)
	assert.InDelta(t, 33.20862634139027, s.CILowUs, 1e-6)
	assert.InDelta(t, 36.455617171583754, s.CIHighUs, 1e-6)
	want := []float64{18.341, 34.552, 50.828, 60.63, 66.428, 67.026, 250, 250}
	got := []float64{s.P25Us, s.P50Us, s.P75Us, s.P90Us, s.P99Us, s.P999Us, s.P9999Us, s.P99999Us}
	assert.InDeltaSlice(t, want, got, eps)
}

func TestPublishedConfidenceInterval(t *testing.T) {
	// sockperf's documentation: n=105413, std-dev 422.741 -> std-error 1.302,
	// 99% confidence interval avg +/- 3.354.
	s := Summary{Observations: 105413, AvgUs: 1000, StdDevUs: 422.741}
	s.finish(99)
	assert.InDelta(t, 1.302, s.StdErrorUs, 0.0005)
	assert.InDelta(t, 3.354, s.CIHighUs-s.AvgUs, 0.0005)
	assert.InDelta(t, 3.354, s.AvgUs-s.CILowUs, 0.0005)
	assert.InDelta(t, 1.959964, zScore(95), 1e-6)
	assert.InDelta(t, 2.575829, zScore(99), 1e-6)
}

func TestSummaryCILevel(t *testing.T) {
	d := goldenSamples()
	s95 := SummarizeSamples(d, &SummaryConfig{CILevel: 95})
	s99 := SummarizeSamples(d, nil)
	assert.Equal(t, 95.0, s95.CILevel)
	assert.Less(t, s95.CIHighUs-s95.CILowUs, s99.CIHighUs-s99.CILowUs)
	bad := SummarizeSamples(d, &SummaryConfig{CILevel: 100})
	assert.Equal(t, defaultCILevel, bad.CILevel, "an impossible level falls back to the default and says so")
}

func TestSummarizeEmpty(t *testing.T) {
	for _, s := range []Summary{
		SummarizeSamples(nil, nil),
		SummarizeHistogram(hdrhistogram.New(1, 1e9, 3), nil),
		SummarizeHistogram(nil, nil),
	} {
		assert.Equal(t, int64(0), s.Observations)
		_, err := json.Marshal(s)
		require.NoError(t, err, "an empty summary must be valid JSON (no NaN)")
	}
	one := SummarizeSamples(us(7), nil)
	assert.Equal(t, 0.0, one.StdDevUs)
	assert.Equal(t, 7.0, one.P99999Us)
	assert.Equal(t, 7.0, one.P25Us)
	_, err := json.Marshal(one)
	require.NoError(t, err)
}

func TestSummarizeHistogramMatchesSamples(t *testing.T) {
	d := goldenSamples()
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for _, v := range d {
		require.NoError(t, h.RecordValue(int64(v)))
	}
	exact := SummarizeSamples(d, nil)
	approx := SummarizeHistogram(h, nil)
	assert.Equal(t, exact.Observations, approx.Observations)
	rel := func(name string, want, got float64) {
		t.Helper()
		assert.InEpsilon(t, want, got, 0.002, name)
	}
	rel("min", exact.MinUs, approx.MinUs)
	rel("max", exact.MaxUs, approx.MaxUs)
	rel("avg", exact.AvgUs, approx.AvgUs)
	rel("stddev", exact.StdDevUs, approx.StdDevUs)
	rel("mean-ad", exact.MeanADUs, approx.MeanADUs)
	rel("median-ad", exact.MedianADUs, approx.MedianADUs)
	rel("p25", exact.P25Us, approx.P25Us)
	rel("p50", exact.P50Us, approx.P50Us)
	rel("p90", exact.P90Us, approx.P90Us)
	rel("p99", exact.P99Us, approx.P99Us)
	rel("p999", exact.P999Us, approx.P999Us)
	rel("p99999", exact.P99999Us, approx.P99999Us)
	rel("ci_low", exact.CILowUs, approx.CILowUs)
}

func TestSummarizeHistogramExactBelow2048ns(t *testing.T) {
	// At 3 significant figures and 1 ns resolution, values below 2048 ns have
	// buckets of width 1, so the histogram gives the exact statistics.
	d := []time.Duration{100, 200, 300, 400, 1000, 1500, 2000}
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for _, v := range d {
		require.NoError(t, h.RecordValue(int64(v)))
	}
	assert.InDelta(t, 0, diffSummary(SummarizeSamples(d, nil), SummarizeHistogram(h, nil)), 1e-9)
}

func diffSummary(a, b Summary) float64 {
	pa := []float64{a.MinUs, a.MaxUs, a.AvgUs, a.StdDevUs, a.MeanADUs, a.MedianADUs, a.SIQRUs, a.CV, a.StdErrorUs, a.CILowUs, a.CIHighUs, a.P25Us, a.P50Us, a.P75Us, a.P90Us, a.P99Us, a.P999Us, a.P9999Us, a.P99999Us}
	pb := []float64{b.MinUs, b.MaxUs, b.AvgUs, b.StdDevUs, b.MeanADUs, b.MedianADUs, b.SIQRUs, b.CV, b.StdErrorUs, b.CILowUs, b.CIHighUs, b.P25Us, b.P50Us, b.P75Us, b.P90Us, b.P99Us, b.P999Us, b.P9999Us, b.P99999Us}
	var m float64
	for i := range pa {
		m = max(m, math.Abs(pa[i]-pb[i]))
	}
	return m
}

func TestSummaryJSONKeys(t *testing.T) {
	b, err := json.Marshal(SummarizeSamples(goldenSamples(), nil))
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
	s := SummarizeSamples(us(4, 1, 3, 2), nil)
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
	exact, approx := SummarizeSamples(d, nil), SummarizeHistogram(h, nil)
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"min", exact.MinUs, approx.MinUs}, {"max", exact.MaxUs, approx.MaxUs}, {"avg", exact.AvgUs, approx.AvgUs},
		{"p50", exact.P50Us, approx.P50Us}, {"p99", exact.P99Us, approx.P99Us}, {"ci_low", exact.CILowUs, approx.CILowUs}} {
		assert.InEpsilon(t, c.want, c.got, 0.001, c.name)
	}
	for _, c := range []struct {
		name      string
		want, got float64
		bound     float64
	}{
		{"stddev", exact.StdDevUs, approx.StdDevUs, width / 2},
		{"siqr", exact.SIQRUs, approx.SIQRUs, width / 2},
		{"mean-ad", exact.MeanADUs, approx.MeanADUs, width},
		{"median-ad", exact.MedianADUs, approx.MedianADUs, 1.5 * width},
		{"std-error", exact.StdErrorUs, approx.StdErrorUs, width / 2 / math.Sqrt(1000)},
		{"ci half-width", exact.CIHighUs - exact.AvgUs, approx.CIHighUs - approx.AvgUs, zScore(exact.CILevel) * width / 2 / math.Sqrt(1000)},
	} {
		assert.InDelta(t, c.want, c.got, c.bound, c.name)
	}
	assert.Greater(t, math.Abs(approx.StdDevUs-exact.StdDevUs), 0.001*exact.StdDevUs, "not within 0.1%")
}
