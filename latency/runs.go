package latency

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// Range summarises one metric over repeated runs the way field studies
// report it: the median of N runs with the minimum and maximum.
type Range struct {
	// Median is the middle value (the mean of the two middle values for an
	// even N).
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// N is the number of runs.
	N int `json:"n"`
}

// Aggregate returns the median and min-max range of values. values is not
// modified; an empty slice gives the zero Range.
func Aggregate(values []float64) Range {
	if len(values) == 0 {
		return Range{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	return Range{Median: medianSorted(v), Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// AggregateFunc returns the median and min-max range of metric over runs, for
// any result type: AggregateFunc(results, func(r *PingPongResult) float64
// { return float64(r.P99) / 1e3 }). A nil metric gives the zero Range.
func AggregateFunc[T any](runs []T, metric func(T) float64) Range {
	if metric == nil {
		return Range{}
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = metric(r)
	}
	return Aggregate(v)
}

// DurationRange is Range for latencies: the median of N runs with the
// minimum and maximum, as time.Duration (a median between two nanoseconds, of
// an even N, is rounded to one). In JSON it keeps Range's shape in float
// microseconds ({"median":..., "min":..., "max":..., "n":...}), as every
// latency in netperfkit's JSON.
type DurationRange struct {
	// Median is the middle value (the mean of the two middle values for an
	// even N).
	Median, Min, Max time.Duration
	// N is the number of runs.
	N int
}

// AggregateDurations is AggregateFunc for a latency metric:
// AggregateDurations(results, func(r *PingPongResult) time.Duration
// { return r.P99 }). A nil metric gives the zero DurationRange.
func AggregateDurations[T any](runs []T, metric func(T) time.Duration) DurationRange {
	if metric == nil {
		return DurationRange{}
	}
	return fromMicros(AggregateFunc(runs, func(r T) float64 { return microseconds(metric(r)) }))
}

// MarshalJSON implements json.Marshaler, in microseconds.
func (r DurationRange) MarshalJSON() ([]byte, error) {
	return json.Marshal(Range{Median: microseconds(r.Median), Min: microseconds(r.Min), Max: microseconds(r.Max), N: r.N})
}

// UnmarshalJSON implements json.Unmarshaler, from microseconds.
func (r *DurationRange) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("latency: UnmarshalJSON into a nil *DurationRange")
	}
	var lr Range
	if err := json.Unmarshal(b, &lr); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	*r = fromMicros(lr)
	return nil
}

// fromMicros converts a range of microseconds.
func fromMicros(r Range) DurationRange {
	d := usec.Duration
	return DurationRange{Median: d(r.Median), Min: d(r.Min), Max: d(r.Max), N: r.N}
}
