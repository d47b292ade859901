package latency

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// defaultCILevel is the confidence level, in percent, of Summary's confidence
// interval when none is configured (sockperf's default).
const defaultCILevel = 99.0

// madScale makes the median absolute deviation a consistent estimator of the
// standard deviation for normal data; sockperf uses this constant.
const madScale = 1.48260221851

// ciLevel is the confidence level a Summary uses for the asked level l:
// l itself inside (0, 100), 99 otherwise (zero included).
func ciLevel(l float64) float64 {
	if !(l > 0 && l < 100) {
		return defaultCILevel
	}
	return l
}

// Summary holds sockperf's statistics of a set of latency observations. The
// zero value describes no observations.
//
// The definitions are sockperf's (what `sockperf --full-rtt` prints), with n
// observations x sorted ascending:
//
//   - avg = sum(x)/n; std-dev = sqrt((sum(x^2) - n*avg^2)/(n-1));
//   - mean-ad = sum(|x-avg|)/n; median-ad = 1.48260221851 * median(|x - median(x)|),
//     where the median of an even count is the mean of the two middle values;
//   - percentile p = x[int(0.5 + p*n) - 1] (p as a fraction); siqr = (p75 - p25)/2;
//   - cv = std-dev/avg; std-error = std-dev/sqrt(n); the confidence interval is
//     avg +/- z*std-error with z the standard normal quantile of 1-(1-level)/2.
//
// The statistics are computed in floating point and rounded to the nearest
// nanosecond; cv, computed before rounding, has no unit.
//
// Dropped, Duplicated and OutOfOrder are filled in by the run that produced the
// observations (the Summarize functions leave them zero); out-of-order replies
// are not among the observations.
//
// In JSON every duration is a float number of microseconds under a key that
// says so ("p99_us"), as sockperf prints them.
type Summary struct {
	Observations int64
	Dropped      int64
	Duplicated   int64
	OutOfOrder   int64

	Min    time.Duration
	Max    time.Duration
	Avg    time.Duration
	StdDev time.Duration
	// sockperf's other dispersion statistics, in JSON and text only:
	// mean-ad, median-ad, siqr, cv (std-dev/avg, no unit) and std-error
	// (std-dev/sqrt(n)).
	meanAD, medianAD, siqr time.Duration
	cv                     float64
	stdError               time.Duration
	// CILevel is the confidence level of [CILow, CIHigh], in percent.
	CILevel float64
	CILow   time.Duration
	CIHigh  time.Duration

	P25    time.Duration
	P50    time.Duration
	P75    time.Duration
	P90    time.Duration
	P99    time.Duration
	P999   time.Duration
	P9999  time.Duration
	P99999 time.Duration
}

// microseconds converts d to float microseconds, the unit of the wire and
// text forms.
func microseconds(d time.Duration) float64 { return usec.Micros(d) }

// fields is the Summary's wire form, for MarshalJSON and UnmarshalJSON
// alike: durations as float microseconds under keys that say so.
func (s *Summary) fields() []usec.Field {
	u, v := usec.Us, usec.Value
	return []usec.Field{
		v("observations", &s.Observations), v("dropped", &s.Dropped), v("duplicated", &s.Duplicated), v("out_of_order", &s.OutOfOrder),
		u("min_us", &s.Min), u("max_us", &s.Max), u("avg_us", &s.Avg), u("stddev_us", &s.StdDev),
		u("mean_ad_us", &s.meanAD), u("median_ad_us", &s.medianAD), u("siqr_us", &s.siqr), v("cv", &s.cv),
		u("std_error_us", &s.stdError), v("ci_level", &s.CILevel), u("ci_low_us", &s.CILow), u("ci_high_us", &s.CIHigh),
		u("p25_us", &s.P25), u("p50_us", &s.P50), u("p75_us", &s.P75), u("p90_us", &s.P90),
		u("p99_us", &s.P99), u("p999_us", &s.P999), u("p9999_us", &s.P9999), u("p99999_us", &s.P99999),
	}
}

// MarshalJSON writes the Summary with its durations in float microseconds
// ("p99_us"), the form netperfkit has always written, sockperf's
// dispersion statistics included ("mean_ad_us", "median_ad_us",
// "siqr_us", "cv", "std_error_us").
func (s Summary) MarshalJSON() ([]byte, error) { return usec.Marshal(s.fields()...) }

// UnmarshalJSON reads what MarshalJSON writes, rounding each duration to
// the nanosecond.
func (s *Summary) UnmarshalJSON(b []byte) error {
	if s == nil {
		return errors.New("latency: summary: UnmarshalJSON into a nil pointer")
	}
	*s = Summary{}
	if err := usec.Unmarshal(b, s.fields()...); err != nil {
		return fmt.Errorf("latency: summary: %w", err)
	}
	return nil
}

// stats are a Summary's statistics while they are computed: in float
// microseconds, as sockperf computes them.
type stats struct {
	n                                       int64
	min, max, avg, stdDev, meanAD, medianAD float64
	p                                       [len(summaryPercentiles)]float64
}

// summary derives the statistics that depend only on n, avg, std-dev and
// the percentiles, and rounds them all to nanoseconds.
func (f *stats) summary(level float64) Summary {
	d := usec.Duration
	s := Summary{
		Observations: f.n, CILevel: level,
		Min: d(f.min), Max: d(f.max), Avg: d(f.avg), StdDev: d(f.stdDev),
		meanAD: d(f.meanAD), medianAD: d(f.medianAD), siqr: d((f.p[2] - f.p[0]) / 2),
		P25: d(f.p[0]), P50: d(f.p[1]), P75: d(f.p[2]), P90: d(f.p[3]),
		P99: d(f.p[4]), P999: d(f.p[5]), P9999: d(f.p[6]), P99999: d(f.p[7]),
	}
	if f.avg != 0 {
		s.cv = f.stdDev / f.avg
	}
	se := f.stdDev / math.Sqrt(float64(f.n))
	half := zScore(level) * se
	s.stdError, s.CILow, s.CIHigh = d(se), d(f.avg-half), d(f.avg+half)
	return s
}

// summaryPercentiles are the percentiles a Summary reports, as fractions.
var summaryPercentiles = [...]float64{0.25, 0.50, 0.75, 0.90, 0.99, 0.999, 0.9999, 0.99999}

// percentileIndex is sockperf's index of percentile p (a fraction) among n
// sorted observations, kept inside 0..n-1.
func percentileIndex(p float64, n int64) int64 {
	i := int64(0.5+p*float64(n)) - 1
	return min(max(i, 0), n-1)
}

// zScore returns the standard normal quantile of 1-(1-level/100)/2, the
// two-sided z of a confidence level in percent (2.5758 for 99).
func zScore(level float64) float64 {
	return math.Sqrt2 * math.Erfinv(level/100)
}

const nsPerUs = 1e3

// summarizeSamples computes sockperf's statistics exactly from raw samples, as
// `sockperf --full-rtt` does. samples is not modified. level is as SummarizeHistogram's.
func summarizeSamples(samples []time.Duration, level float64) Summary {
	level = ciLevel(level)
	n := int64(len(samples))
	if n == 0 {
		return Summary{CILevel: level}
	}
	x := make([]float64, n)
	for i, d := range samples {
		x[i] = float64(d) / nsPerUs
	}
	slices.Sort(x)
	var sum, sumSq float64
	for _, v := range x {
		sum += v
		sumSq += v * v
	}
	fn := float64(n)
	f := stats{n: n, min: x[0], max: x[n-1], avg: sum / fn}
	f.stdDev = stdDev(sumSq, f.avg, fn)
	var ad float64
	for _, v := range x {
		ad += math.Abs(v - f.avg)
	}
	f.meanAD = ad / fn
	med := medianSorted(x)
	dev := make([]float64, n)
	for i, v := range x {
		dev[i] = math.Abs(v - med)
	}
	slices.Sort(dev)
	f.medianAD = madScale * medianSorted(dev)
	for i, q := range summaryPercentiles {
		f.p[i] = x[percentileIndex(q, n)]
	}
	return f.summary(level)
}

func stdDev(sumSq, avg, n float64) float64 {
	if n < 2 {
		return 0
	}
	v := (sumSq - n*avg*avg) / (n - 1)
	if v <= 0 { // rounding on identical values
		return 0
	}
	return math.Sqrt(v)
}

func medianSorted(x []float64) float64 {
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// bucket is one populated histogram bucket: its representative value (the
// middle of its equivalent range, in microseconds) and its count.
type bucket struct {
	v float64
	n int64
}

// weightedAt returns the value of the k-th (0-based) observation in buckets
// sorted by value.
func weightedAt(b []bucket, k int64) float64 {
	for _, e := range b {
		if k < e.n {
			return e.v
		}
		k -= e.n
	}
	return b[len(b)-1].v
}

func weightedMedian(b []bucket, n int64) float64 {
	if n%2 == 1 {
		return weightedAt(b, n/2)
	}
	return (weightedAt(b, n/2-1) + weightedAt(b, n/2)) / 2
}

// SummarizeHistogram computes sockperf's statistics from a histogram of
// nanosecond values, for runs that did not keep raw samples. Each value stands
// for the middle of its bucket's equivalent range (as HdrHistogram's Mean
// does), except that the percentiles use HdrHistogram's ValueAtPercentile, whose
// rank is sockperf's int(0.5 + p*n) and whose value is the highest equivalent
// value of the bucket, and min and max use the bucket bounds. h is only read;
// cfg may be nil.
//
// Precision: with 3 significant figures (the default) a bucket is at most
// 1/1024 of its values wide, so the statistics of location (min, max, avg,
// the percentiles and the CI bounds) are within 0.1% of the exact ones. The
// statistics of spread are accurate to a bucket width, not to a fraction of
// themselves: std-dev and siqr may be off by up to half a bucket width at
// the largest values, mean-ad by a whole width and median-ad by 1.5 widths;
// std-error by half a width over the square root of the count, the CI's
// half-width by its z score times that, and cv by std-dev's error over avg.
// When the values spread over few buckets (a spread near 0.1% of the
// values, as in a quiet loopback ping-pong), these can be off by 100% or
// more: a median-ad of 0 for an exact 0.019 us, a doubled std-dev.
// Summarise the raw samples (summarizeSamples) when spread at that scale
// matters.
//
// level is the confidence level of the interval around the average, in
// percent, exclusive of 0 and 100: 0, or a value outside (0, 100), means
// 99; the level used is reported in Summary.CILevel.
func SummarizeHistogram(h *hdrhistogram.Histogram, level float64) Summary {
	level = ciLevel(level)
	if h == nil || h.TotalCount() == 0 {
		return Summary{CILevel: level}
	}
	var b []bucket
	for _, bar := range h.Distribution() {
		if bar.Count > 0 {
			mid := bar.From + (bar.To-bar.From+1)/2
			b = append(b, bucket{v: float64(mid) / nsPerUs, n: bar.Count})
		}
	}
	var n int64
	var sum, sumSq float64
	for _, e := range b {
		c := float64(e.n)
		n += e.n
		sum += c * e.v
		sumSq += c * e.v * e.v
	}
	fn := float64(n)
	f := stats{n: n, min: float64(h.Min()) / nsPerUs, max: float64(h.Max()) / nsPerUs, avg: sum / fn}
	f.stdDev = stdDev(sumSq, f.avg, fn)
	var ad float64
	for _, e := range b {
		ad += float64(e.n) * math.Abs(e.v-f.avg)
	}
	f.meanAD = ad / fn
	med := weightedMedian(b, n)
	dev := make([]bucket, len(b))
	for i, e := range b {
		dev[i] = bucket{v: math.Abs(e.v - med), n: e.n}
	}
	slices.SortFunc(dev, func(a, c bucket) int { return cmpFloat(a.v, c.v) })
	f.medianAD = madScale * weightedMedian(dev, n)
	for i, q := range summaryPercentiles {
		f.p[i] = float64(h.ValueAtPercentile(q*100)) / nsPerUs
	}
	return f.summary(level)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// WriteText writes the Summary in the shape of sockperf's summary, with label
// naming what was measured: "Round trip" (printed as avg-rtt, like sockperf
// --full-rtt) or anything else, such as "Latency" (printed as avg-latency).
// Durations are printed in microseconds with three decimals, as sockperf
// prints them.
func (s Summary) WriteText(out io.Writer, label string) error {
	if out == nil {
		return errors.New("latency: WriteText: nil io.Writer")
	}
	ew := &errWriter{w: out}
	u := microseconds
	avg := "avg-latency"
	if label == "Round trip" {
		avg = "avg-rtt"
	}
	ew.printf("sockperf: ====> %s=%.3f (std-dev=%.3f, mean-ad=%.3f, median-ad=%.3f, siqr=%.3f, cv=%.3f, std-error=%.3f, %.1f%% ci=[%.3f, %.3f])\n",
		avg, u(s.Avg), u(s.StdDev), u(s.meanAD), u(s.medianAD), u(s.siqr), s.cv, u(s.stdError), s.CILevel, u(s.CILow), u(s.CIHigh))
	ew.printf("sockperf: # dropped messages = %d; # duplicated messages = %d; # out-of-order messages = %d\n",
		s.Dropped, s.Duplicated, s.OutOfOrder)
	ew.printf("sockperf: Summary: %s is %.3f usec\n", label, u(s.Avg))
	ew.printf("sockperf: Total %d observations; each percentile contains %.2f observations\n",
		s.Observations, float64(s.Observations)/100)
	ew.printf("sockperf: ---> <MAX> observation = %8.3f\n", u(s.Max))
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"99.999", u(s.P99999)}, {"99.990", u(s.P9999)}, {"99.900", u(s.P999)}, {"99.000", u(s.P99)},
		{"90.000", u(s.P90)}, {"75.000", u(s.P75)}, {"50.000", u(s.P50)}, {"25.000", u(s.P25)},
	} {
		ew.printf("sockperf: ---> percentile %s = %8.3f\n", r.name, r.v)
	}
	ew.printf("sockperf: ---> <MIN> observation = %8.3f\n", u(s.Min))
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
