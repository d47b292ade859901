package latency

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// Range summarises one metric over repeated runs the way field studies
// report it: the median of N runs with the minimum and maximum. V is
// float64 for a plain metric (a rate, a ratio) or time.Duration for a
// latency. In JSON it is {"median":..., "min":..., "max":..., "n":...},
// a latency's values in float microseconds, as every latency in
// netperfkit's JSON.
type Range[V float64 | time.Duration] struct {
	// Median is the middle value (the mean of the two middle values for an
	// even N, a latency's rounded to the nanosecond).
	Median, Min, Max V
	// N is the number of runs.
	N int
}

// AggregateFunc returns the median and min-max range of metric over runs, for
// any result type: AggregateFunc(results, func(r *PingPongResult)
// time.Duration { return r.P99 }) is a Range[time.Duration], and a metric
// of float64 gives a Range[float64]. A nil metric, or no runs, gives the
// zero Range.
func AggregateFunc[T any, V float64 | time.Duration](runs []T, metric func(T) V) Range[V] {
	if metric == nil || len(runs) == 0 {
		return Range[V]{}
	}
	v := make([]V, len(runs))
	for i, r := range runs {
		v[i] = metric(r)
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		m := (float64(v[n/2-1]) + float64(v[n/2])) / 2
		med = V(m)
		if _, ok := any(med).(time.Duration); ok {
			med = V(usec.FromNanoseconds(m))
		}
	}
	return Range[V]{Median: med, Min: v[0], Max: v[n-1], N: n}
}

// fields is the Range's wire form, for MarshalJSON and UnmarshalJSON.
func (r *Range[V]) fields() []usec.Field {
	f := func(key string, p *V) usec.Field {
		if d, ok := any(p).(*time.Duration); ok {
			return usec.Us(key, d)
		}
		return usec.Value(key, p)
	}
	return []usec.Field{f("median", &r.Median), f("min", &r.Min), f("max", &r.Max), usec.Value("n", &r.N)}
}

// MarshalJSON implements json.Marshaler, a latency in float microseconds.
func (r Range[V]) MarshalJSON() ([]byte, error) { return usec.Marshal(r.fields()...) }

// UnmarshalJSON implements json.Unmarshaler, a latency from float
// microseconds.
func (r *Range[V]) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("latency: UnmarshalJSON into a nil *Range")
	}
	*r = Range[V]{}
	if err := usec.Unmarshal(b, r.fields()...); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	return nil
}
