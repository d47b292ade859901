package cache

import (
	"time"

	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/latency"
)

func run(p50, p99, ops float64, attempts, errs int64, kinds map[ErrorKind]int64) *RunResult {
	return &RunResult{Engine: respName, Mode: ModePool, OpsPerSec: ops, Attempts: attempts, Errors: errs,
		ErrorsByKind: kinds, Latency: latency.Summary{P50: time.Duration(p50 * 1e3), P99: time.Duration(p99 * 1e3)}}
}

func TestSummarize(t *testing.T) {
	runs := []*RunResult{
		run(30, 90, 1000, 10, 1, map[ErrorKind]int64{ErrTimeout: 1}),
		run(10, 70, 3000, 20, 2, map[ErrorKind]int64{ErrTimeout: 1, ErrConnection: 1}),
		run(20, 80, 2000, 30, 0, nil),
	}
	a := Summarize(runs)
	assert.Equal(t, latency.Range{Median: 20, Min: 10, Max: 30, N: 3}, a.P50Us)
	assert.Equal(t, 80.0, a.P99Us.Median)
	assert.Equal(t, latency.Range{Median: 2000, Min: 1000, Max: 3000, N: 3}, a.OpsPerSec)
	assert.Equal(t, int64(60), a.Attempts)
	assert.Equal(t, int64(3), a.Errors)
	assert.Equal(t, map[ErrorKind]int64{ErrTimeout: 2, ErrConnection: 1}, a.ErrorsByKind)
	assert.Equal(t, 20.0, Summarize(runs[:2]).P50Us.Median, "even count: mean of the middle two")
	assert.Nil(t, Summarize(nil))

	b := &Aggregate{P50Us: latency.Range{Median: 23}, P99Us: latency.Range{Median: 425.6}, OpsPerSec: latency.Range{Median: 640}}
	c := Compare("node", a, "serverless", b)
	assert.InDelta(t, 1.15, c.P50Ratio, 1e-9)
	assert.InDelta(t, 5.32, c.P99Ratio, 1e-9)
	assert.InDelta(t, 0.32, c.OpsPerSecRatio, 1e-9)
	assert.Zero(t, Compare("z", &Aggregate{}, "b", b).P50Ratio)
}

func TestKeySlot(t *testing.T) {
	// Reference values from the cluster specification and redis-cli
	// CLUSTER KEYSLOT.
	assert.Equal(t, 12739, keySlot("123456789"))
	assert.Equal(t, uint16(0x31C3), crc16("123456789"))
	assert.Equal(t, keySlot("user1000"), keySlot("{user1000}.following"))
	assert.Equal(t, keySlot("foo{}{bar}"), keySlot("foo{}{bar}"))
	assert.Equal(t, 15495, keySlot("a"))
}
