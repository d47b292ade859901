package cache

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file gives the external tests (package cache_test, which may import
// cachetest, which imports cache) the internals they check.

// CheckRespClientFollowsMoved: with a slot map that sends every key to the
// first node, the resp engine's operations still succeed and the map is
// corrected; each node ends up holding only its own keys.
func CheckRespClientFollowsMoved(t *testing.T, addrs []string) {
	ctx := context.Background()
	d, err := newDialer(&Endpoint{Addr: addrs[0], Cluster: true})
	require.NoError(t, err)
	cl, err := (&respEngine{d: d}).newClient(ctx)
	require.NoError(t, err)
	c := cl.(*respClient)
	defer c.Close()
	right := c.slots
	c.slots = newSlotMap([]slotRange{{0, numSlots - 1, addrs[0]}})
	moved := 0
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		if right.addr(keySlot(key)) != addrs[0] {
			moved++
		}
		require.NoError(t, c.Set(ctx, key, "v"))
		require.NoError(t, c.Get(ctx, key))
		assert.Equal(t, right.addr(keySlot(key)), c.slots.addr(keySlot(key)))
	}
	assert.Positive(t, moved, "some keys live on other nodes")
	assert.Len(t, c.conns, 3)

	for _, addr := range addrs {
		cn, err := d.dial(ctx, addr)
		require.NoError(t, err)
		v, err := cn.do(ctx, PhaseCommand, "DBSIZE")
		require.NoError(t, err)
		assert.Positive(t, v.Num, addr)
		require.NoError(t, cn.close(ctx))
	}
	cn, err := d.dial(ctx, addrs[0])
	require.NoError(t, err)
	v, err := cn.do(ctx, PhaseCommand, "CLUSTER", "KEYSLOT", "a")
	require.NoError(t, err)
	assert.Equal(t, int64(keySlot("a")), v.Num, "our CRC16 matches the server's")
	_ = cn.close(ctx)
}

// ProbeConfigWith returns a ProbeConfig with the knobs only the tests set.
func ProbeConfigWith(probes, concurrency int, interval time.Duration, command []string, onProbe func(ProbeResult)) *ProbeConfig {
	return &ProbeConfig{Probes: probes, concurrency: concurrency, interval: interval, command: command, onProbe: onProbe}
}
