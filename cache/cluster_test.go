package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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

// A redirect names its target; an empty or "?" host means the sender's.
func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		msg, from string
		ask       bool
		slot      int
		addr      string
		ok        bool
	}{
		{"MOVED 3999 127.0.0.1:6381", "10.0.0.1:6379", false, 3999, "127.0.0.1:6381", true},
		{"ASK 0 cache.internal:7000", "10.0.0.1:6379", true, 0, "cache.internal:7000", true},
		{"MOVED 12182 :44509", "127.0.0.2:7001", false, 12182, "127.0.0.2:44509", true},
		{"MOVED 12182 ?:44509", "node-a.internal:7001", false, 12182, "node-a.internal:44509", true},
		{"ASK 5 :7002", "[::1]:7000", true, 5, "[::1]:7002", true},
		{"MOVED 16383 [fe80::1]:7000", "a:1", false, 16383, "[fe80::1]:7000", true},
		{"MOVED 16384 a:1", "b:1", false, 0, "", false},
		{"MOVED -1 a:1", "b:1", false, 0, "", false},
		{"MOVED 1 a", "b:1", false, 0, "", false},
		{"MOVED 1 a:", "b:1", false, 0, "", false},
		{"MOVED 1 :7000", "not-an-address", false, 0, "", false},
		{"ERR 1 a:1", "b:1", false, 0, "", false},
		{"MOVED 1", "b:1", false, 0, "", false},
	} {
		ask, slot, addr, ok := parseRedirect(tc.msg, tc.from)
		require.Equal(t, tc.ok, ok, tc.msg)
		if ok {
			require.Equal(t, tc.ask, ask, tc.msg)
			require.Equal(t, tc.slot, slot, tc.msg)
			require.Equal(t, tc.addr, addr, tc.msg)
		}
	}
}
