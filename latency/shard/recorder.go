package shard

import (
	"fmt"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// The histogram settings every shard records with, so that any two shards'
// histograms add up exactly: 1 µs to 60 s at 3 significant figures (a value
// is kept within 0.1 %). A longer time is recorded as 60 s and counted in
// OutOfRange.
const (
	HistogramLowest             = time.Microsecond
	HistogramHighest            = 60 * time.Second
	HistogramSignificantFigures = 3
)

// Interval limits: DefaultInterval is the zero RecorderConfig.Interval.
const (
	DefaultInterval = time.Second
	MinInterval     = time.Millisecond
	MaxInterval     = time.Hour
	// maxIntervals bounds the intervals of one Recorder (and of a decoded
	// Result): a day of 1 s intervals.
	maxIntervals = 86400
)

// Interval is what one shard measured in one interval of the wall-clock
// grid. Start and End are wall-clock times; they are the grid's boundaries
// except at the shard's first and last intervals, which it measured only in
// part (and which Merge never counts).
type Interval struct {
	Start time.Time
	End   time.Time
	// Count is the number of operations that succeeded in the interval:
	// the histogram's total count.
	Count int64
	// Errors is the number of operations that failed in it.
	Errors int64
	// OutOfRange counts the operations longer than HistogramHighest,
	// recorded in the histogram as HistogramHighest.
	OutOfRange int64
	// Histogram holds the latencies of the Count operations in
	// nanoseconds; nil when Count is zero.
	Histogram *hdrhistogram.Histogram
}

// RecorderConfig configures a Recorder. A nil *RecorderConfig means the
// defaults.
type RecorderConfig struct {
	// Interval is the length of an interval of the grid. Zero means
	// DefaultInterval (1 s); otherwise MinInterval..MaxInterval. Every shard
	// of a run must use the same.
	Interval time.Duration
}

// Recorder records operations into the per-interval histograms of one
// shard. It is safe for concurrent use: Record and RecordError take no lock.
// A nil *Recorder records nothing.
type Recorder struct {
	start     time.Time // with its monotonic reading
	startWall int64     // start's wall clock, Unix ns
	planned   time.Duration
	interval  int64
	first     int64 // grid index of start
	buckets   []bucket
	outside   atomic.Int64
}

type bucket struct {
	rec    *latency.Recorder
	errors atomic.Int64
}

// NewRecorder returns a Recorder for a measurement that starts at start (a
// time.Now() reading, so that its monotonic clock places operations) and
// lasts d. Operations that end outside [start, start+d) are not recorded
// (Outside counts them). The error wraps ErrInvalid for a zero start, a d
// that is not positive, or intervals out of range or too many (at most
// 86,400 per run).
func NewRecorder(start time.Time, d time.Duration, cfg *RecorderConfig) (*Recorder, error) {
	iv := DefaultInterval
	if cfg != nil && cfg.Interval != 0 {
		iv = cfg.Interval
	}
	switch {
	case start.IsZero():
		return nil, fmt.Errorf("%w recorder: zero start time", ErrInvalid)
	case d <= 0:
		return nil, fmt.Errorf("%w recorder: duration %v is not positive", ErrInvalid, d)
	case iv < MinInterval || iv > MaxInterval:
		return nil, fmt.Errorf("%w RecorderConfig.Interval %v: must be %v..%v", ErrInvalid, iv, MinInterval, MaxInterval)
	}
	r := &Recorder{start: start, startWall: start.UnixNano(), planned: d, interval: int64(iv)}
	r.first = floorDiv(r.startWall, r.interval)
	last := floorDiv(r.startWall+int64(d)-1, r.interval)
	n := last - r.first + 1
	if n > maxIntervals {
		return nil, fmt.Errorf("%w recorder: %v in intervals of %v is %d intervals, above %d", ErrInvalid, d, iv, n, maxIntervals)
	}
	r.buckets = make([]bucket, n)
	for i := range r.buckets {
		rec, err := latency.NewRecorder(&latency.RecorderConfig{
			Lowest: HistogramLowest, Highest: HistogramHighest, SignificantFigures: HistogramSignificantFigures,
		})
		if err != nil {
			return nil, fmt.Errorf("shard: %w", err)
		}
		r.buckets[i].rec = rec
	}
	return r, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketAt returns the bucket of an operation that ended at, or nil.
func (r *Recorder) bucketAt(at time.Time) *bucket {
	if r == nil {
		return nil
	}
	off := at.Sub(r.start)
	if off < 0 || off >= r.planned {
		r.outside.Add(1)
		return nil
	}
	k := floorDiv(r.startWall+int64(off), r.interval) - r.first
	if k < 0 || k >= int64(len(r.buckets)) {
		r.outside.Add(1)
		return nil
	}
	return &r.buckets[k]
}

// Record records an operation that succeeded, ended at at (a time.Now()
// reading) and took d.
func (r *Recorder) Record(at time.Time, d time.Duration) {
	if b := r.bucketAt(at); b != nil {
		b.rec.Record(d)
	}
}

// RecordError counts an operation that failed and ended at at.
func (r *Recorder) RecordError(at time.Time) {
	if b := r.bucketAt(at); b != nil {
		b.errors.Add(1)
	}
}

// Outside returns the number of operations that ended outside the
// measurement (before start, or after start plus the duration).
func (r *Recorder) Outside() int64 {
	if r == nil {
		return 0
	}
	return r.outside.Load()
}

// Start returns the start the Recorder was given; zero for a nil one.
func (r *Recorder) Start() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.start
}

// Interval returns the grid's interval; zero for a nil Recorder.
func (r *Recorder) Interval() time.Duration {
	if r == nil {
		return 0
	}
	return time.Duration(r.interval)
}

// Intervals returns the intervals measured from the start to end (a
// time.Now() reading taken when the last operation was recorded; the
// planned end when end is later, zero or before the start), in order, the
// empty ones included. Call it once recording has stopped.
func (r *Recorder) Intervals(end time.Time) []Interval {
	if r == nil {
		return nil
	}
	off := end.Sub(r.start)
	if end.IsZero() || off <= 0 || off > r.planned {
		off = r.planned
	}
	endWall := r.startWall + int64(off)
	var out []Interval
	for i := range r.buckets {
		gs := (r.first + int64(i)) * r.interval
		s, e := max(gs, r.startWall), min(gs+r.interval, endWall)
		if s >= e {
			break
		}
		b := &r.buckets[i]
		iv := Interval{Start: time.Unix(0, s).UTC(), End: time.Unix(0, e).UTC(), Errors: b.errors.Load(), OutOfRange: b.rec.OutOfRange()}
		if b.rec.Count() > 0 {
			iv.Histogram = b.rec.Snapshot()
			iv.Count = iv.Histogram.TotalCount()
		}
		out = append(out, iv)
	}
	return out
}
