// Package usec converts the float microseconds (and nanoseconds) of
// netperfkit's JSON to time.Duration, for package latency and its
// sub-packages (docs/conventions.md: durations are float microseconds on
// the wire).
package usec

import (
	"math"
	"time"
)

// Duration rounds float microseconds to the nearest nanosecond, clamped
// as FromNanoseconds clamps.
func Duration(us float64) time.Duration { return FromNanoseconds(us * 1e3) }

// FromNanoseconds rounds float nanoseconds to a Duration, clamped to the
// Duration range (a float beyond it has no defined conversion, and NaN is
// 0), so that whatever a decoder accepts converts the same on every
// platform.
func FromNanoseconds(ns float64) time.Duration {
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	case math.IsNaN(ns):
		return 0
	}
	return time.Duration(math.Round(ns))
}
