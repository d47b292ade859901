package cache

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// The resp engine follows MOVED: with a slot map that sends every key to the
// first node, operations still succeed and the map is corrected.
func TestRespClientFollowsMoved(t *testing.T) {
	s := cachetest.NewCluster(t)
	ctx := context.Background()
	d, err := newDialer(ctx, &Endpoint{Addr: s.Addr, Cluster: true})
	require.NoError(t, err)
	cl, err := (&respEngine{d: d}).newClient(ctx)
	require.NoError(t, err)
	c := cl.(*respClient)
	defer c.close()
	right := *c.slots
	for i := range c.slots {
		c.slots[i] = s.Addrs[0]
	}
	moved := 0
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		if right[keySlot(key)] != s.Addrs[0] {
			moved++
		}
		require.NoError(t, c.set(ctx, key, "v"))
		require.NoError(t, c.get(ctx, key))
		assert.Equal(t, right[keySlot(key)], c.slots[keySlot(key)])
	}
	assert.Positive(t, moved, "some keys live on other nodes")
	assert.Len(t, c.conns, 3)

	// Each node holds only its own keys: the routing really spread them.
	for _, addr := range s.Addrs {
		cn, err := d.dial(ctx, addr)
		require.NoError(t, err)
		v, err := cn.do(ctx, PhaseCommand, "DBSIZE")
		require.NoError(t, err)
		assert.Positive(t, v.num, addr)
		require.NoError(t, cn.close(ctx))
	}
	cn, err := d.dial(ctx, s.Addrs[0])
	require.NoError(t, err)
	v, err := cn.do(ctx, PhaseCommand, "CLUSTER", "KEYSLOT", "a")
	require.NoError(t, err)
	assert.Equal(t, int64(keySlot("a")), v.num, "our CRC16 matches the server's")
	_ = cn.close(ctx)
}
