package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	runs := []*RunResult{
		{Engine: EngineResp, Mode: ModePool, P50Us: 30, P99Us: 90, OpsPerSec: 1000, Attempts: 10, Errors: 1, ErrorsByKind: map[ErrorKind]int64{ErrTimeout: 1}},
		{Engine: EngineResp, Mode: ModePool, P50Us: 10, P99Us: 70, OpsPerSec: 3000, Attempts: 20, Errors: 2, ErrorsByKind: map[ErrorKind]int64{ErrTimeout: 1, ErrConnection: 1}},
		{Engine: EngineResp, Mode: ModePool, P50Us: 20, P99Us: 80, OpsPerSec: 2000, Attempts: 30},
	}
	a := Summarize(runs)
	assert.Equal(t, 20.0, a.P50Us)
	assert.Equal(t, Range{10, 30}, a.P50UsRange)
	assert.Equal(t, 80.0, a.P99Us)
	assert.Equal(t, 2000.0, a.OpsPerSec)
	assert.Equal(t, Range{1000, 3000}, a.OpsPerSecRange)
	assert.Equal(t, int64(60), a.Attempts)
	assert.Equal(t, int64(3), a.Errors)
	assert.Equal(t, map[ErrorKind]int64{ErrTimeout: 2, ErrConnection: 1}, a.ErrorsByKind)
	assert.Equal(t, 20.0, Summarize(runs[:2]).P50Us, "even count: mean of the middle two")
	assert.Nil(t, Summarize(nil))

	b := &Aggregate{P50Us: 23, P99Us: 425.6, OpsPerSec: 640}
	c := Compare("node", a, "serverless", b)
	assert.InDelta(t, 1.15, c.P50Ratio, 1e-9)
	assert.InDelta(t, 5.32, c.P99Ratio, 1e-9)
	assert.InDelta(t, 0.32, c.OpsPerSecRatio, 1e-9)
	assert.InDelta(t, 3, c.P50DeltaUs, 1e-9)
	assert.Zero(t, Compare("z", &Aggregate{}, "b", b).P50Ratio)
}

func TestParseRatio(t *testing.T) {
	g, s, err := ParseRatio("1:1")
	require.NoError(t, err)
	assert.Equal(t, [2]int{1, 1}, [2]int{g, s})
	g, s, err = ParseRatio("9:0")
	require.NoError(t, err)
	assert.Equal(t, [2]int{9, 0}, [2]int{g, s})
	for _, bad := range []string{"", "1", "a:b", "-1:2", "0:0", "1:1:1"} {
		_, _, err := ParseRatio(bad)
		assert.Error(t, err, bad)
	}
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
