package shard

import (
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// check reports what Merge and WriteFile cannot trust in r, as strictly as
// Decode reads a file: the shard's place, the interval, intervals in order
// on the grid and within the measurement, counts that their histograms
// hold, this package's histogram settings, and CPU figures in range. Its
// error wraps ErrInvalid (ErrMismatch for other histogram settings) and
// names the field.
func (r *Result) check() error {
	if err := r.Shard.validate("Result.Shard"); err != nil {
		return err
	}
	switch {
	case r.Interval < minInterval || r.Interval > maxInterval:
		return fmt.Errorf("%w Result.Interval %v: must be %v..%v", ErrInvalid, r.Interval, minInterval, maxInterval)
	case r.End.Before(r.Start):
		return fmt.Errorf("%w Result.End %s: before Result.Start %s", ErrInvalid, r.End.Format(time.RFC3339Nano), r.Start.Format(time.RFC3339Nano))
	case len(r.Intervals) > maxIntervals+1:
		return fmt.Errorf("%w Result.Intervals: %d, above %d", ErrInvalid, len(r.Intervals), maxIntervals+1)
	case r.SendLatenessP99 != nil && *r.SendLatenessP99 < 0:
		return fmt.Errorf("%w Result.SendLatenessP99 %v: negative", ErrInvalid, *r.SendLatenessP99)
	case r.ResponseP99 != nil && *r.ResponseP99 < 0:
		return fmt.Errorf("%w Result.ResponseP99 %v: negative", ErrInvalid, *r.ResponseP99)
	}
	if err := r.CPU.check(); err != nil {
		return err
	}
	for i := range r.Intervals {
		if err := r.checkInterval(i); err != nil {
			return err
		}
	}
	return nil
}

// checkInterval checks r.Intervals[i] against the grid, its neighbour and
// its histogram.
func (r *Result) checkInterval(i int) error {
	x := &r.Intervals[i]
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w Result.Intervals[%d]: %s", ErrInvalid, i, fmt.Sprintf(format, a...))
	}
	s, e, iv := x.Start.UnixNano(), x.End.UnixNano(), int64(r.Interval)
	switch {
	case e <= s || e-s > iv:
		return bad("length %v is not within (0, %v]", x.End.Sub(x.Start), r.Interval)
	case floorDiv(s, iv) != floorDiv(e-1, iv):
		return bad("%s..%s crosses a boundary of the %v grid", x.Start.Format(time.RFC3339Nano), x.End.Format(time.RFC3339Nano), r.Interval)
	case i > 0 && x.Start.Before(r.Intervals[i-1].End):
		return bad("starts before Intervals[%d] ends", i-1)
	case x.Start.Before(r.Start) || x.End.After(r.End):
		return bad("%s..%s is outside Result.Start..End", x.Start.Format(time.RFC3339Nano), x.End.Format(time.RFC3339Nano))
	case x.Count < 0 || x.Errors < 0 || x.OutOfRange < 0:
		return bad("negative Count, Errors or OutOfRange")
	case x.OutOfRange > x.Count:
		return bad("OutOfRange %d above Count %d", x.OutOfRange, x.Count)
	case x.Histogram == nil && x.Count != 0:
		return bad("Count %d without a Histogram", x.Count)
	case x.Histogram == nil:
		return nil
	}
	if err := checkSettings(x.Histogram); err != nil {
		return fmt.Errorf("Result.Intervals[%d]: %w", i, err)
	}
	if n := x.Histogram.TotalCount(); n != x.Count {
		return bad("Count %d but its Histogram holds %d", x.Count, n)
	}
	return nil
}

// checkSettings refuses a histogram whose settings are not this package's:
// its counts would not add up with the other shards'.
func checkSettings(h *hdrhistogram.Histogram) error {
	if h.LowestTrackableValue() != int64(histogramLowest) || h.HighestTrackableValue() != int64(histogramHighest) ||
		h.SignificantFigures() != histogramSigFigs {
		return fmt.Errorf("%w: histogram settings %d..%d ns at %d figures, want %d..%d ns at %d (shard: every shard records with these)",
			ErrMismatch, h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(),
			int64(histogramLowest), int64(histogramHighest), histogramSigFigs)
	}
	return nil
}

// check refuses CPU figures that a verdict cannot use: negative or not
// finite, a host busier than all its CPUs, more throttled periods than
// periods. A nil c is fine (unknown).
func (c *CPU) check() error {
	if c == nil {
		return nil
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	field := ""
	switch {
	case c.Process < 0:
		field = "Process"
	case c.Cgroup != nil && *c.Cgroup < 0:
		field = "Cgroup"
	case c.Wall < 0:
		field = "Wall"
	case bad(c.LimitCores):
		field = "LimitCores"
	case c.Periods != nil && *c.Periods < 0:
		field = "Periods"
	case c.Throttled != nil && (*c.Throttled < 0 || c.Periods != nil && *c.Throttled > *c.Periods):
		field = "Throttled"
	case c.HostBusy != nil && (bad(*c.HostBusy) || *c.HostBusy > 1):
		field = "HostBusy"
	default:
		return nil
	}
	return fmt.Errorf("%w Result.CPU.%s: out of range", ErrInvalid, field)
}
