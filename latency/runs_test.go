package latency

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Range of latencies: the median to the nanosecond, and JSON in float
// microseconds, which reads back to the nanosecond.
func TestAggregateDurations(t *testing.T) {
	runs := []time.Duration{30 * time.Microsecond, 10 * time.Microsecond, 25500 * time.Nanosecond, 40 * time.Microsecond}
	r := AggregateFunc(runs, func(d time.Duration) time.Duration { return d })
	assert.Equal(t, Range[time.Duration]{Median: 27750 * time.Nanosecond, Min: 10 * time.Microsecond, Max: 40 * time.Microsecond, N: 4}, r)

	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"median":27.75,"min":10,"max":40,"n":4}`, string(b))
	var back Range[time.Duration]
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)

	assert.Equal(t, Range[time.Duration]{}, AggregateFunc[int, time.Duration](nil, nil))
	require.Error(t, json.Unmarshal([]byte(`{"median":"x"}`), &back))
}

// A Range of plain values keeps them as they are, in Go and in JSON.
func TestAggregateFloats(t *testing.T) {
	r := AggregateFunc([]float64{3, 1, 2, 10}, func(v float64) float64 { return v })
	assert.Equal(t, Range[float64]{Median: 2.5, Min: 1, Max: 10, N: 4}, r)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, `{"median":2.5,"min":1,"max":10,"n":4}`, string(b))
	var back Range[float64]
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)
}
