package cache

import (
	"context"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SlotRange is how the hash slots of one cluster primary fared in a run
// (RunResult.SlotRanges): whether operations on them failed, the longest
// time without a success, and how long they took to succeed again. A
// failover shows in the range of the primary that stopped: its failures,
// a LongestGap as long as the outage, and a Recovery that ends when the
// client first reached the promoted replica. A range that did not fail can
// still show a gap, while every worker waited on the stopped primary.
//
// Times have the resolution of the run's success log: 1 ms for runs of up
// to about 17 minutes (coarser for longer runs or more primaries).
type SlotRange struct {
	// Failed counts the operations on these slots that failed.
	Failed int64 `json:"failed"`
	// LongestGap is the longest time without a success on these slots:
	// between two successes, from the run's start to the first, or, when
	// operations failed after the last success, from it to the run's end.
	LongestGap time.Duration `json:"longest_gap_ns"`
	// Recovery runs from the start of the first operation on these slots
	// that failed to the first success on them after it: the time to
	// recover from a fault, seen from the client. Zero when none failed,
	// or when none succeeded afterwards (Failed is then not zero).
	Recovery time.Duration `json:"recovery_ns"`
}

// slotWatch keeps, for a cluster run, a success log per primary's slot
// ranges and the first failure on them, from which SlotRanges is
// computed. Safe for concurrent use.
type slotWatch struct {
	start  time.Time
	res    time.Duration // one bit of a success log
	index  [numSlots]int16
	groups []*slotGroup
}

// slotGroup is one primary's slots.
type slotGroup struct {
	name      string // "0-5460" or "0-99,200-5460"
	mu        sync.Mutex
	ok        []uint64 // bit b: a success ended in [b*res, (b+1)*res)
	failed    int64
	firstFail time.Time // start of the earliest failed operation
	lastFail  time.Time // start of the latest failed operation
}

// slotLogBits bounds the success logs of a run, all groups together
// (1 MiB): 1 ms a bit for a 17-minute run on a 3-primary cluster.
const slotLogBits = 1 << 23

// watchSlots reads ep's slot map (a cluster endpoint) for the run w, or
// returns nil: not a cluster, or CLUSTER SLOTS failed (the run then goes
// without SlotRanges; its own clients report the failure).
func watchSlots(ctx context.Context, ep *Endpoint, w *WorkloadConfig) *slotWatch {
	if !ep.Cluster {
		return nil
	}
	epc := *ep
	epc.RequestTimeout = orDefault(ep.RequestTimeout, defaultRequestTimeout)
	epc.ConnectTimeout = orDefault(ep.ConnectTimeout, defaultConnectTimeout)
	d, err := newDialer(&epc)
	if err != nil {
		return nil
	}
	c, err := d.dial(ctx, epc.Addr)
	if err != nil {
		return nil
	}
	ranges, err := c.clusterSlots(ctx)
	c.close(context.WithoutCancel(ctx))
	if err != nil {
		return nil
	}
	return newSlotWatch(ranges, w.Duration, time.Now())
}

// newSlotWatch groups ranges by primary, in slot order.
func newSlotWatch(ranges []slotRange, d time.Duration, start time.Time) *slotWatch {
	sw := &slotWatch{start: start}
	for i := range sw.index {
		sw.index[i] = -1
	}
	rs := newSlotMap(ranges).ranges
	byAddr := map[string]int{}
	var names [][]string
	for _, r := range rs {
		g, ok := byAddr[r.addr]
		if !ok {
			g = len(names)
			byAddr[r.addr] = g
			names = append(names, nil)
		}
		names[g] = append(names[g], strconv.Itoa(r.lo)+"-"+strconv.Itoa(r.hi))
		for s := r.lo; s <= r.hi; s++ {
			sw.index[s] = int16(g)
		}
	}
	for _, n := range names {
		sw.groups = append(sw.groups, &slotGroup{name: strings.Join(n, ",")})
	}
	sw.res = max(time.Millisecond, d*time.Duration(max(len(names), 1))/slotLogBits)
	return sw
}

// record logs one operation on slot (-1: unknown) that ran from t0 to t1.
func (sw *slotWatch) record(slot int, t0, t1 time.Time, err error) {
	if sw == nil || slot < 0 || slot >= numSlots || sw.index[slot] < 0 {
		return
	}
	g := sw.groups[sw.index[slot]]
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.failed++
		if g.firstFail.IsZero() || t0.Before(g.firstFail) {
			g.firstFail = t0
		}
		if t0.After(g.lastFail) {
			g.lastFail = t0
		}
		return
	}
	b := int(max(t1.Sub(sw.start), 0) / sw.res)
	for len(g.ok) <= b/64 {
		g.ok = append(g.ok, 0)
	}
	g.ok[b/64] |= 1 << (b % 64)
}

// fill sets r.SlotRanges from the logs; end is the run's end.
func (sw *slotWatch) fill(r *RunResult, end time.Time) {
	if sw == nil {
		return
	}
	r.SlotRanges = make(map[string]SlotRange, len(sw.groups))
	for _, g := range sw.groups {
		g.mu.Lock()
		r.SlotRanges[g.name] = sw.summarize(g, end)
		g.mu.Unlock()
	}
}

// summarize computes g's SlotRange. Its caller holds g.mu.
func (sw *slotWatch) summarize(g *slotGroup, end time.Time) SlotRange {
	out := SlotRange{Failed: g.failed}
	ok := successBits(g.ok)
	prev := 0 // the run's start
	for _, b := range ok {
		out.LongestGap = max(out.LongestGap, time.Duration(b+1-prev)*sw.res)
		prev = b + 1
	}
	last := sw.start.Add(time.Duration(prev) * sw.res) // end of the last success's slot
	if g.failed > 0 && (len(ok) == 0 || !g.lastFail.Before(last)) {
		out.LongestGap = max(out.LongestGap, end.Sub(last))
	}
	if g.failed == 0 {
		return out
	}
	from := int(max(g.firstFail.Sub(sw.start), 0) / sw.res)
	if i, _ := slices.BinarySearch(ok, from+1); i < len(ok) {
		out.Recovery = sw.start.Add(time.Duration(ok[i]+1) * sw.res).Sub(g.firstFail)
	}
	return out
}

// successBits lists the set bits of a success log, ascending.
func successBits(words []uint64) []int {
	var out []int
	for i, w := range words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &^= 1 << b
		}
	}
	return out
}

// retryCount is the context key under which a run's tally counts the
// operations its resp engine sent again (RunResult.Retried).
type retryCount struct{}

// countRetry counts one retried operation in the run ctx belongs to.
func countRetry(ctx context.Context) {
	if t, ok := ctx.Value(retryCount{}).(*tally); ok {
		t.retried.Add(1)
	}
}
