package shard

import (
	"fmt"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// histogramHighest is the longest operation a shard's histograms hold
// exactly. Every shard records with the same settings, so that any two
// shards' histograms add up exactly: 1 µs to 60 s at 3 significant figures
// (a value is kept within 0.1 %). A longer operation is recorded as
// histogramHighest and counted in OutOfRange.
const histogramHighest = 60 * time.Second

const (
	histogramLowest  = time.Microsecond
	histogramSigFigs = 3
)

// defaultInterval is the grid's interval when Config.Interval is zero.
// Intervals run from 1 ms to 1 h, and a run holds at most 86,400 of them.
const defaultInterval = time.Second

const (
	minInterval = time.Millisecond
	maxInterval = time.Hour
	// maxIntervals bounds the length of one run: a day of 1 s intervals
	// (a Result holds one more when its start is off the grid).
	maxIntervals = 86400
)

// Interval is what one shard measured in one interval of the wall-clock
// grid (multiples of the interval since the Unix epoch). Start and End are
// wall-clock times; they are the grid's boundaries except at the shard's
// first and last intervals, which it may have measured only in part (Merge
// counts those only within Config.StartTolerance of whole).
type Interval struct {
	Start time.Time
	End   time.Time
	// Count is the number of operations that succeeded in the interval:
	// the histogram's total count.
	Count int64
	// Errors is the number of operations that failed in it.
	Errors int64
	// OutOfRange counts the operations longer than 60 s (the histograms'
	// highest value), recorded in the histogram as 60 s.
	OutOfRange int64
	// Histogram holds the latencies of the Count operations in
	// nanoseconds, with this package's settings; nil when Count is zero.
	Histogram *hdrhistogram.Histogram
}

// recorder records operations into the per-interval histograms of one
// shard. It is safe for concurrent use: record takes no lock, and an
// interval's histogram is allocated when its first operation ends.
type recorder struct {
	start     time.Time // with its monotonic reading
	startWall int64     // start's wall clock, Unix ns
	planned   time.Duration
	interval  int64
	first     int64 // grid index of start
	buckets   []bucket
	outside   atomic.Int64
}

// recorderSettings are every interval's histogram settings.
func recorderSettings() *latency.RecorderConfig {
	return &latency.RecorderConfig{Lowest: histogramLowest, Highest: histogramHighest, SignificantFigures: histogramSigFigs}
}

type bucket struct {
	rec    atomic.Pointer[latency.Recorder]
	errors atomic.Int64
}

// newRecorder returns a recorder for a measurement that starts at start (a
// time.Now() reading, so that its monotonic clock places operations) and
// lasts d, on a grid of iv. Operations that end outside [start, start+d)
// are counted as outside, not recorded.
func newRecorder(start time.Time, d, iv time.Duration) (*recorder, error) {
	if err := checkRun(start, d, iv); err != nil {
		return nil, err
	}
	if _, err := latency.NewRecorder(recorderSettings()); err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	r := &recorder{start: start, startWall: start.UnixNano(), planned: d, interval: int64(iv)}
	r.first = floorDiv(r.startWall, r.interval)
	last := floorDiv(r.startWall+int64(d)-1, r.interval)
	r.buckets = make([]bucket, last-r.first+1)
	return r, nil
}

// checkRun checks a run's start, duration and interval before any
// arithmetic on them can overflow.
func checkRun(start time.Time, d, iv time.Duration) error {
	switch {
	case start.IsZero():
		return fmt.Errorf("%w: zero start time", ErrInvalid)
	case d <= 0:
		return fmt.Errorf("%w Config.Duration %v: must be positive", ErrInvalid, d)
	case iv < minInterval || iv > maxInterval:
		return fmt.Errorf("%w Config.Interval %v: must be %v..%v", ErrInvalid, iv, minInterval, maxInterval)
	case d > maxIntervals*iv: // no overflow: iv is at most an hour
		return fmt.Errorf("%w Config.Duration %v: more than %d intervals of %v", ErrInvalid, d, maxIntervals, iv)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// bucketAt returns the bucket of an operation that ended at, or nil.
func (r *recorder) bucketAt(at time.Time) *bucket {
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

// record records an operation that ended at at (a time.Now() reading) and
// took d, or failed when err is not nil.
func (r *recorder) record(at time.Time, d time.Duration, err error) {
	b := r.bucketAt(at)
	switch {
	case b == nil:
	case err != nil:
		b.errors.Add(1)
	default:
		b.histogram().Record(d)
	}
}

// histogram returns the bucket's recorder, allocating it on first use.
func (b *bucket) histogram() *latency.Recorder {
	if rec := b.rec.Load(); rec != nil {
		return rec
	}
	// newRecorder made one with these settings: no error here, and a nil
	// *latency.Recorder would record nothing rather than panic.
	rec, _ := latency.NewRecorder(recorderSettings())
	if b.rec.CompareAndSwap(nil, rec) {
		return rec
	}
	return b.rec.Load()
}

// intervals returns the intervals measured from the start to end (a
// time.Now() reading taken when the last operation was recorded; the
// planned end when end is later or before the start), in order, the empty
// ones included. Call it once recording has stopped.
func (r *recorder) intervals(end time.Time) []Interval {
	off := end.Sub(r.start)
	if off <= 0 || off > r.planned {
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
		iv := Interval{Start: time.Unix(0, s).UTC(), End: time.Unix(0, e).UTC(), Errors: b.errors.Load()}
		if rec := b.rec.Load(); rec != nil && rec.Count() > 0 {
			iv.Histogram = rec.Snapshot()
			iv.Count = iv.Histogram.TotalCount()
			iv.OutOfRange = rec.OutOfRange()
		}
		out = append(out, iv)
	}
	return out
}
