package latency

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DurationRange is Range in time.Duration: the same median, and Range's JSON
// in float microseconds, which reads back to the nanosecond.
func TestAggregateDurations(t *testing.T) {
	runs := []time.Duration{30 * time.Microsecond, 10 * time.Microsecond, 25500 * time.Nanosecond, 40 * time.Microsecond}
	r := AggregateDurations(runs, func(d time.Duration) time.Duration { return d })
	assert.Equal(t, DurationRange{Median: 27750 * time.Nanosecond, Min: 10 * time.Microsecond, Max: 40 * time.Microsecond, N: 4}, r)

	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"median":27.75,"min":10,"max":40,"n":4}`, string(b))
	var back DurationRange
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)

	assert.Equal(t, DurationRange{}, AggregateDurations[int](nil, nil))
	require.Error(t, json.Unmarshal([]byte(`{"median":"x"}`), &back))
}
