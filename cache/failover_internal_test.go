package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The success log turns operations into each primary's failures, longest
// gap and recovery, whatever order concurrent workers record them in.
func TestSlotWatch(t *testing.T) {
	start := time.Unix(1000, 0)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	ranges := []slotRange{{0, 5460, "a:1"}, {5461, 10922, "b:1"}, {12001, 16383, "c:1"}, {10923, 12000, "c:1"}}
	sw := newSlotWatch(ranges, 10*time.Second, start)
	require.Equal(t, time.Millisecond, sw.res)
	boom := errors.New("boom")
	const sa, sb, sc = 0, 6000, 11000 // slots of a, b and c (c has two ranges)
	for i := 0; i < 2000; i += 10 {
		sw.record(sa, ms(i), ms(i+1), nil)
		sw.record(sc, ms(i), ms(i+1), nil)
	}
	for i := 0; i < 500; i += 10 {
		sw.record(sb, ms(i), ms(i+1), nil)
	}
	// b stops at 500 ms: operations started from 505 ms fail, recorded
	// late (after their timeout) and out of order; success again at 1,800.
	sw.record(sb, ms(700), ms(1200), boom)
	sw.record(sb, ms(505), ms(1005), boom)
	sw.record(sb, ms(1200), ms(1700), boom)
	// An operation in flight when b stopped fails, while another,
	// answered just before, ends after it started: not a recovery.
	sw.record(sb, ms(495), ms(995), boom)
	sw.record(sb, ms(494), ms(496), nil)
	sw.record(sb, ms(1790), ms(1800), nil)
	sw.record(sb, ms(1900), ms(1901), nil)
	sw.record(-1, ms(0), ms(1), boom) // no slot: not counted
	r := &RunResult{}
	sw.fill(r, ms(2000))
	require.Len(t, r.SlotRanges, 3)
	require.Equal(t, SlotRange{LongestGap: 10 * time.Millisecond}, r.SlotRanges["0-5460"])
	require.Equal(t, SlotRange{LongestGap: 10 * time.Millisecond}, r.SlotRanges["10923-12000,12001-16383"])
	b := r.SlotRanges["5461-10922"]
	require.Equal(t, int64(4), b.Failed)
	require.Equal(t, 1304*time.Millisecond, b.LongestGap, "from the last success before (ended at 496 ms) to the first after (1,800 ms)")
	require.Equal(t, 1296*time.Millisecond, b.Recovery, "from the first failure in that gap (505) to the end of the first success's millisecond after it (1801)")

	// A range that never recovers: its gap runs to the end and it has no
	// recovery time.
	sw = newSlotWatch(ranges, 10*time.Second, start)
	sw.record(sb, ms(0), ms(10), nil)
	sw.record(sb, ms(20), ms(520), boom)
	r = &RunResult{}
	sw.fill(r, ms(3000))
	require.Equal(t, SlotRange{Failed: 1, LongestGap: 2989 * time.Millisecond}, r.SlotRanges["5461-10922"])
	require.Equal(t, SlotRange{}, r.SlotRanges["0-5460"], "nothing ran: no gap counted")

	var nilWatch *slotWatch
	nilWatch.record(0, start, start, nil)
	nilWatch.fill(r, start)
}
