package usec

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDuration(t *testing.T) {
	for us, want := range map[float64]time.Duration{
		0: 0, 1: time.Microsecond, 123.456: 123456 * time.Nanosecond, 0.0004: 0, 0.0005: time.Nanosecond,
		-2.5: -2500 * time.Nanosecond, 1e300: math.MaxInt64, -1e300: math.MinInt64,
		math.Inf(1): math.MaxInt64, math.Inf(-1): math.MinInt64, math.NaN(): 0,
	} {
		assert.Equal(t, want, Duration(us), "%v us", us)
	}
	assert.Equal(t, time.Duration(math.MaxInt64), FromNanoseconds(math.MaxInt64))
	assert.Equal(t, 2*time.Nanosecond, FromNanoseconds(1.5))
}
