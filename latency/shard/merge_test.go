package shard

import (
	"bytes"
	"math"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pair returns two shards of 2 that measured the same 3 s from t0, 10
// operations a second each.
func pair(t *testing.T) (a, b *Result) {
	t0 := time.Unix(5000, 0)
	a = fakeShard(t, Spec{Index: 0, Count: 2}, t0, 3*time.Second, time.Second, 10, time.Millisecond)
	b = fakeShard(t, Spec{Index: 1, Count: 2}, t0, 3*time.Second, time.Second, 10, 2*time.Millisecond)
	return a, b
}

// TestMergeChecksResultsAsDecodeDoes: Merge refuses in memory what Decode
// refuses in a file, naming the field, and so does encode (WriteFile).
func TestMergeChecksResultsAsDecodeDoes(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name  string
		edit  func(a, b *Result)
		want  error
		field string
	}{
		{"histogram of other settings", func(a, _ *Result) {
			h := hdrhistogram.New(1, 1000, 2)
			for range a.Intervals[1].Count {
				_ = h.RecordValue(500)
			}
			a.Intervals[1].Histogram = h
		}, ErrMismatch, "Result.Intervals[1]: shard: results do not match: histogram settings 1..1000 ns at 2 figures"},
		{"count its histogram does not hold", func(a, _ *Result) { a.Intervals[1].Count += 5 },
			ErrInvalid, "Result.Intervals[1]: Count 15 but its Histogram holds 10"},
		{"count without a histogram", func(a, _ *Result) { a.Intervals[1].Histogram = nil }, ErrInvalid, "Count 10 without a Histogram"},
		{"overlapping intervals", func(a, _ *Result) { a.Intervals[1] = a.Intervals[0] }, ErrInvalid, "Result.Intervals[1]: starts before Intervals[0] ends"},
		{"interval across the grid", func(a, _ *Result) {
			a.Intervals[0].Start, a.Intervals[0].End = a.Intervals[0].Start.Add(-time.Second/2), a.Intervals[0].End.Add(-time.Second/2)
		}, ErrInvalid, "crosses a boundary"},
		{"interval outside the measurement", func(a, _ *Result) { a.Start = a.Start.Add(time.Millisecond) }, ErrInvalid, "outside Result.Start..End"},
		{"interval too long", func(a, _ *Result) { a.Interval = time.Second / 2 }, ErrInvalid, "length 1s is not within (0, 500ms]"},
		{"negative errors", func(a, _ *Result) { a.Intervals[2].Errors = -1 }, ErrInvalid, "Result.Intervals[2]: negative"},
		{"more out of range than counted", func(a, _ *Result) { a.Intervals[2].OutOfRange = 11 }, ErrInvalid, "OutOfRange 11 above Count 10"},
		{"end before start", func(a, _ *Result) { a.End = a.Start.Add(-time.Second) }, ErrInvalid, "Result.End"},
		{"interval out of range", func(a, _ *Result) { a.Interval = 0 }, ErrInvalid, "Result.Interval 0s"},
		{"shard outside its count", func(_, b *Result) { b.Shard.Index = 2 }, ErrInvalid, "Result.Shard.Index 2"},
		{"zero shard", func(_, b *Result) { b.Shard = Spec{} }, ErrInvalid, "Result.Shard.Count 0"},
		{"host busy NaN", func(a, _ *Result) { a.CPU = &CPU{Wall: time.Second, LimitCores: 2, HostBusy: &nan} }, ErrInvalid, "Result.CPU.HostBusy"},
		{"limit NaN", func(a, _ *Result) { a.CPU = &CPU{Wall: time.Second, LimitCores: nan} }, ErrInvalid, "Result.CPU.LimitCores"},
		{"negative lateness", func(a, _ *Result) { d := -time.Second; a.SendLatenessP99 = &d }, ErrInvalid, "Result.SendLatenessP99"},
		{"one shard twice", func(a, b *Result) { b.Shard = a.Shard }, ErrMismatch, "shard 0/2 given twice"},
		{"other tools", func(_, b *Result) { b.Tool = "other" }, ErrMismatch, `"other"`},
		{"other counts", func(_, b *Result) { b.Shard.Count = 3 }, ErrMismatch, "count differently"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := pair(t)
			c.edit(a, b)
			m, err := Merge([]*Result{a, b}, nil)
			require.ErrorIs(t, err, c.want)
			assert.ErrorContains(t, err, c.field)
			require.NotNil(t, m)
			assert.NotNil(t, m.Histogram)
			assert.Zero(t, m.Count, "nothing merged from results it refuses")
			if c.want == ErrInvalid || c.name == "histogram of other settings" {
				var buf bytes.Buffer
				err := errorsJoin(encode(&buf, a), encode(&buf, b))
				assert.ErrorIs(t, err, c.want, "WriteFile refuses it too")
			}
		})
	}
	a, b := pair(t)
	m, err := Merge([]*Result{a, b}, nil)
	require.NoError(t, err, "the unedited pair merges")
	assert.Equal(t, int64(60), m.Count)
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestMergeConfigRefusesOutOfRange: a share that is NaN or above 1 no
// longer turns a saturated shard into "not saturated"; it is an error
// naming the field.
func TestMergeConfigRefusesOutOfRange(t *testing.T) {
	a, b := pair(t)
	a.CPU = &CPU{Process: 6 * time.Second, Wall: 3 * time.Second, LimitCores: 2, LimitSource: "cpus"} // 2 of 2 cores
	m, err := Merge([]*Result{a, b}, nil)
	require.NoError(t, err)
	assert.True(t, m.Rows[0].Saturated, m.Rows[0].Reason)
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{CPUShare: math.NaN()}, "Config.CPUShare NaN"},
		{Config{CPUShare: 5}, "Config.CPUShare 5"},
		{Config{CPUShare: -0.5}, "Config.CPUShare -0.5"},
		{Config{CPUShare: math.Inf(1)}, "Config.CPUShare +Inf"},
		{Config{ThrottledShare: 1.5}, "Config.ThrottledShare 1.5"},
		{Config{LatenessShare: math.NaN()}, "Config.LatenessShare NaN"},
		{Config{StartTolerance: -time.Millisecond}, "Config.StartTolerance -1ms"},
		{Config{StartTolerance: 200 * time.Millisecond}, "Config.StartTolerance 200ms: must be 0..100ms"},
	} {
		m, err := Merge([]*Result{a, b}, &c.cfg)
		require.ErrorIs(t, err, ErrInvalid, c.field)
		assert.ErrorContains(t, err, c.field)
		assert.NotNil(t, m)
		assert.Empty(t, m.Rows, "no verdict from a threshold out of range")
	}
	m, err = Merge([]*Result{a, b}, &Config{CPUShare: 1})
	require.NoError(t, err)
	assert.True(t, m.Rows[0].Saturated, "2 of 2 cores is at a share of 1")
}

// TestMergeCountsIntervalsWithinStartTolerance: shards that started a few
// microseconds after a StartAt on the grid have their first interval
// counted; one that started later than the tolerance has not.
func TestMergeCountsIntervalsWithinStartTolerance(t *testing.T) {
	at := time.Unix(6000, 0)
	shards := func(lates ...time.Duration) []*Result {
		var rs []*Result
		for i, late := range lates {
			r := fakeShard(t, Spec{Index: i, Count: len(lates)}, at.Add(late), 5*time.Second, time.Second, 100, time.Millisecond)
			r.StartAt = at
			rs = append(rs, r)
		}
		return rs
	}
	recorded := func(rs []*Result) (n int64) {
		for _, r := range rs {
			for _, x := range r.Intervals {
				n += x.Count
			}
		}
		return n
	}
	for _, c := range []struct {
		name      string
		lates     []time.Duration
		cfg       *Config
		intervals int
	}{
		{"started together", []time.Duration{40 * time.Microsecond, 90 * time.Microsecond}, nil, 5},
		{"at the tolerance", []time.Duration{0, 10 * time.Millisecond}, nil, 5},
		{"beyond the tolerance", []time.Duration{40 * time.Microsecond, 20 * time.Millisecond}, nil, 4},
		{"beyond the default, within a stated one", []time.Duration{40 * time.Microsecond, 20 * time.Millisecond},
			&Config{StartTolerance: 30 * time.Millisecond}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := shards(c.lates...)
			m, err := Merge(rs, c.cfg)
			require.NoError(t, err)
			assert.Equal(t, c.intervals, m.Intervals)
			assert.Equal(t, at.UTC().Add(time.Duration(5-c.intervals)*time.Second), m.WindowStart)
			assert.Equal(t, c.lates[1], m.StartSkew, "after StartAt")
			assert.Equal(t, c.lates[0], m.Rows[0].Skew)
			if c.intervals == 5 {
				assert.GreaterOrEqual(t, float64(m.Count)/float64(recorded(rs)), 0.99)
			}
			assert.Equal(t, m.Count, m.Histogram.TotalCount())
		})
	}
	// A 100 ms grid: the tolerance is 1 % of it, 1 ms.
	r0 := fakeShard(t, Spec{Index: 0, Count: 1}, at.Add(900*time.Microsecond), time.Second, 100*time.Millisecond, 10, time.Millisecond)
	m, err := Merge([]*Result{r0}, nil)
	require.NoError(t, err)
	assert.Equal(t, 10, m.Intervals)
	r0 = fakeShard(t, Spec{Index: 0, Count: 1}, at.Add(1100*time.Microsecond), time.Second, 100*time.Millisecond, 10, time.Millisecond)
	m, err = Merge([]*Result{r0}, nil)
	require.NoError(t, err)
	assert.Equal(t, 9, m.Intervals)
}
