package latency

import "slices"

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
