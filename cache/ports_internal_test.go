package cache

import (
	"encoding/json"
	"testing"

	"github.com/netperfkit/netperfkit/cache/internal/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortUsageLimitedBy(t *testing.T) {
	snap := func(inUse int) *ports.Snapshot {
		return &ports.Snapshot{InUse: inUse, TimeWait: inUse, RangeLo: 1001, RangeHi: 2000}
	}
	for _, tc := range []struct {
		before, after int
		limited       bool
	}{
		{0, 100, false},
		{260, 750, false}, // issue 31's first run: 26% at the start
		{750, 750, true},  // its second run: 75% at the start
		{460, 510, true},  // 46% at the start: 8 times slower across a veth
		{390, 500, false},
		{0, 950, true}, // filled the range itself
	} {
		u := newPortUsage(snap(tc.before), snap(tc.after))
		assert.Equal(t, tc.limited, u.LimitedBy == LimitedByPorts, "%+v", tc)
		assert.Equal(t, 1000, u.before.RangeSize)
		assert.InDelta(t, float64(tc.after)/1000, u.after.Share, 1e-9)
	}
	reused := newPortUsage(&ports.Snapshot{InUse: 750, TimeWait: 750, Reusable: 750, RangeLo: 1001, RangeHi: 2000}, snap(0))
	assert.Empty(t, reused.LimitedBy, "TIME_WAIT a connect may take over does not limit it")
	assert.InDelta(t, 0.75, reused.before.Share, 1e-9)
	assert.Zero(t, reused.BlockedBefore)
	b, err := json.Marshal(reused)
	require.NoError(t, err)
	assert.JSONEq(t, `{"before":{"time_wait":750,"in_use":750,"range_size":1000,"share":0.75,"reusable":750,"blocked":0},
		"after":{"time_wait":0,"in_use":0,"range_size":1000,"share":0,"reusable":0,"blocked":0}}`, string(b), "the JSON E3's debris always had")
	var back PortUsage
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, *reused, back)
	assert.Nil(t, newPortUsage(nil, snap(1)), "unknown is nil, not zeros")
	assert.Nil(t, newPortUsage(snap(1), nil))
}
