package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A yielder yields at its first call, then once every yieldEvery on the
// caller's clock, never twice in one period.
func TestYielderOncePerPeriod(t *testing.T) {
	var y yielder
	var yields []int64
	step := int64(300 * time.Microsecond)
	for now := int64(time.Second); now < int64(time.Second)+4*int64(yieldEvery); now += step {
		if y.at(now) {
			yields = append(yields, now)
		}
	}
	if assert.Len(t, yields, 4, "%v", yields) {
		assert.Equal(t, int64(time.Second), yields[0], "the first call yields")
	}
	for i := 1; i < len(yields); i++ {
		gap := yields[i] - yields[i-1]
		assert.GreaterOrEqual(t, gap, int64(yieldEvery), "yields %d and %d", i-1, i)
		assert.Less(t, gap, int64(yieldEvery)+step, "yields %d and %d: a due yield waited", i-1, i)
	}
}
