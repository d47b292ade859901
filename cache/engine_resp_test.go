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
	right := c.slots
	c.slots = newSlotMap([]slotRange{{0, numSlots - 1, s.Addrs[0]}})
	moved := 0
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		if right.addr(keySlot(key)) != s.Addrs[0] {
			moved++
		}
		require.NoError(t, c.set(ctx, key, "v"))
		require.NoError(t, c.get(ctx, key))
		assert.Equal(t, right.addr(keySlot(key)), c.slots.addr(keySlot(key)))
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

// A slot map answers, for every slot, what the ranges it was built from say
// (the later range where they overlap, "" where none covers), and a MOVED
// override wins over the ranges for its slot only.
func TestSlotMap(t *testing.T) {
	for name, ranges := range map[string][]slotRange{
		"cluster": {{5461, 10922, "b:6379"}, {0, 5460, "a:6379"}, {10923, 16383, "c:6379"}},
		"gaps":    {{100, 199, "a:1"}, {16000, 16383, "b:1"}, {0, 0, "c:1"}, {200, 200, "d:1"}},
		"overlap": {{0, 9000, "a:1"}, {4000, 5000, "b:1"}, {8000, 12000, "c:1"}, {0, 10, "d:1"}, {12000, 12000, "e:1"}},
		"one":     {{0, numSlots - 1, "a:1"}},
		"none":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			var want [numSlots]string
			for _, r := range ranges {
				for s := r.lo; s <= r.hi; s++ {
					want[s] = r.addr
				}
			}
			m := newSlotMap(ranges)
			for s := range numSlots {
				require.Equal(t, want[s], m.addr(s), "slot %d", s)
			}
			m.set(4500, "moved:1")
			want[4500] = "moved:1"
			m.set(numSlots-1, "moved:2")
			want[numSlots-1] = "moved:2"
			for s := range numSlots {
				require.Equal(t, want[s], m.addr(s), "slot %d after MOVED", s)
			}
		})
	}
}

// The slot map of a three-node cluster, built once per client (so once per
// operation in connect mode), then asked for a key's slot.
func BenchmarkSlotMap(b *testing.B) {
	ranges := []slotRange{{0, 5460, "a:6379"}, {5461, 10922, "b:6379"}, {10923, 16383, "c:6379"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if newSlotMap(ranges).addr(i%numSlots) == "" {
			b.Fatal("slot not covered")
		}
	}
}
