package rpm

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
)

func TestTrimmedMeanAndRPM(t *testing.T) {
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for range 95 {
		_ = h.RecordValue(int64(10 * time.Millisecond))
	}
	for range 5 {
		_ = h.RecordValue(int64(10 * time.Second)) // the slowest 5% are trimmed
	}
	tm := TrimmedMean(h, Trim)
	assert.InEpsilon(t, float64(10*time.Millisecond), float64(tm), 0.001)
	assert.InEpsilon(t, 6000, RPM(tm), 0.001)
	assert.InEpsilon(t, float64(h.Mean()), float64(TrimmedMean(h, 100)), 0.001, "nothing trimmed: the mean")
	assert.Zero(t, TrimmedMean(nil, 95))
	assert.Zero(t, TrimmedMean(hdrhistogram.New(1, 10, 1), 95))
	assert.Zero(t, RPM(0))
	assert.InDelta(t, 600, RPM(100*time.Millisecond), 1e-9)
}

func TestCombine(t *testing.T) {
	// 1/4 x (4 ms + 4 ms) + 1/2 x 2 ms = 3 ms: 20,000 round trips a minute.
	assert.InDelta(t, 20000, Combine(4*time.Millisecond, 4*time.Millisecond, 2*time.Millisecond), 1e-6)
	assert.Zero(t, Combine(0, time.Millisecond, time.Millisecond), "a missing part gives no RPM")
	assert.Zero(t, Combine(time.Millisecond, time.Millisecond, 0))
}
