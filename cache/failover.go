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
	// Recovery is the longest outage's length from the client's side:
	// from the start of its first failed operation to the first success
	// on these slots after it (an outage is a time without a success in
	// which an operation failed). Zero when none failed, or when the
	// longest outage lasted to the run's end (Failed is then not zero).
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
	name   string // "0-5460" or "0-99,200-5460"
	mu     sync.Mutex
	ok     []uint64 // bit b: a success ended in [b*res, (b+1)*res)
	fail   []uint64 // bit b: a failed operation started in [b*res, (b+1)*res)
	failed int64
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

// record logs one operation on slot (-1: unknown) that ran from t0 to t1:
// a success by its end, a failure by its start.
func (sw *slotWatch) record(slot int, t0, t1 time.Time, err error) {
	if sw == nil || slot < 0 || slot >= numSlots || sw.index[slot] < 0 {
		return
	}
	g := sw.groups[sw.index[slot]]
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.failed++
		g.fail = setBit(g.fail, sw.bit(t0))
		return
	}
	g.ok = setBit(g.ok, sw.bit(t1))
}

// bit is t's bit in a log.
func (sw *slotWatch) bit(t time.Time) int {
	return int(max(t.Sub(sw.start), 0) / sw.res)
}

// setBit sets bit b of log, growing it.
func setBit(log []uint64, b int) []uint64 {
	for len(log) <= b/64 {
		log = append(log, 0)
	}
	log[b/64] |= 1 << (b % 64)
	return log
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
//
// The gaps are the times between successes (and from the run's start to
// the first). A gap in which an operation failed is an outage; the
// longest outage is the fault's, and Recovery runs from its first
// failure to the success that ends it. Failures are placed by their
// start and successes by their end, so a success that was answered just
// before the fault, while a failed operation was already waiting, does
// not count as a recovery. A failure after the last success makes the
// tail, to the run's end, an outage that never recovered.
func (sw *slotWatch) summarize(g *slotGroup, end time.Time) SlotRange {
	out := SlotRange{Failed: g.failed}
	ok, fail := successBits(g.ok), successBits(g.fail)
	prev := 0 // the end of the previous success's bit, or the run's start
	var outage time.Duration
	for _, b := range ok {
		gap := time.Duration(b+1-prev) * sw.res
		out.LongestGap = max(out.LongestGap, gap)
		// The first failure that started in this gap, at or after the
		// previous success's bit.
		i, _ := slices.BinarySearch(fail, max(prev-1, 0))
		if i < len(fail) && fail[i] <= b && gap > outage {
			outage = gap
			out.Recovery = time.Duration(b+1-fail[i]) * sw.res
		}
		prev = b + 1
	}
	if i, _ := slices.BinarySearch(fail, max(prev-1, 0)); i < len(fail) {
		// Failures after the last success: an outage to the run's end.
		tail := end.Sub(sw.start.Add(time.Duration(prev) * sw.res))
		out.LongestGap = max(out.LongestGap, tail)
		if tail > outage {
			out.Recovery = 0
		}
	}
	return out
}

// successBits lists the set bits of a log, ascending.
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
