package latency

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Default range and precision of a Recorder.
const (
	defaultLowest             = time.Nanosecond
	defaultHighest            = 60 * time.Second
	defaultSignificantFigures = 3
)

// ErrInvalidConfig is wrapped by the errors of constructors given a
// configuration they cannot honour.
var ErrInvalidConfig = errors.New("latency: invalid configuration")

// RecorderConfig sets the range and precision of a Recorder. A nil
// *RecorderConfig means all defaults.
type RecorderConfig struct {
	// Lowest is the smallest duration the histogram discerns. Zero means
	// 1 ns. Durations below it are still recorded, in the lowest bucket.
	Lowest time.Duration
	// Highest is the largest duration the histogram tracks. Zero means
	// 60 s. Longer durations are recorded as Highest and counted by
	// OutOfRange, so the tail is never silently lost.
	Highest time.Duration
	// SignificantFigures is the number of significant decimal digits kept
	// (1..5). Zero means 3: a value is kept within 0.1%.
	SignificantFigures int
}

// geometry mirrors hdrhistogram-go's bucket indexing so that a Recorder can
// count with atomic adds into arrays that hdrhistogram.Import reads as they are.
type geometry struct {
	lowest, highest int64
	sigFigs         int
	unitMag         int
	subHalfMag      int
	subHalf         int64
	subMask         int64
	countsLen       int
}

func newGeometry(cfg *RecorderConfig) (geometry, error) {
	var c RecorderConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Lowest == 0 {
		c.Lowest = defaultLowest
	}
	if c.Highest == 0 {
		c.Highest = defaultHighest
	}
	if c.SignificantFigures == 0 {
		c.SignificantFigures = defaultSignificantFigures
	}
	switch {
	case c.Lowest < 0:
		return geometry{}, fmt.Errorf("%w: Lowest %v is negative", ErrInvalidConfig, c.Lowest)
	case c.Highest < 2*c.Lowest:
		return geometry{}, fmt.Errorf("%w: Highest %v must be at least twice Lowest %v", ErrInvalidConfig, c.Highest, c.Lowest)
	case c.SignificantFigures < 1 || c.SignificantFigures > 5:
		return geometry{}, fmt.Errorf("%w: SignificantFigures %d is outside 1..5", ErrInvalidConfig, c.SignificantFigures)
	}
	g := geometry{lowest: int64(c.Lowest), highest: int64(c.Highest), sigFigs: c.SignificantFigures}
	largestSingleUnit := 2 * math.Pow10(g.sigFigs)
	subCountMag := int(math.Ceil(math.Log2(largestSingleUnit)))
	g.subHalfMag = max(subCountMag, 1) - 1
	g.unitMag = max(int(math.Floor(math.Log2(float64(g.lowest)))), 0)
	if g.unitMag+g.subHalfMag > 61 {
		return geometry{}, fmt.Errorf("%w: Lowest %v is too large for %d significant figures", ErrInvalidConfig, c.Lowest, g.sigFigs)
	}
	subCount := int64(1) << (g.subHalfMag + 1)
	g.subHalf = subCount / 2
	g.subMask = (subCount - 1) << g.unitMag
	smallestUntrackable := subCount << g.unitMag
	buckets := 1
	for smallestUntrackable <= g.highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	g.countsLen = (buckets + 1) * int(g.subHalf)
	return g, nil
}

// index returns the position of v (0 <= v <= highest) in the counts array,
// exactly as hdrhistogram-go's countsIndexFor computes it.
func (g *geometry) index(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v|g.subMask)) - g.unitMag - (g.subHalfMag + 1)
	sub := v >> uint(bucket+g.unitMag)
	return int(int64(bucket+1)<<uint(g.subHalfMag) + sub - g.subHalf)
}

// counts is one shard's histogram: bucket counts updated with atomic adds.
type counts struct {
	c          []int64
	outOfRange int64
}

func (g *geometry) record(c *counts, d time.Duration) {
	v := int64(d)
	if v < 0 || v > g.highest {
		atomic.AddInt64(&c.outOfRange, 1)
		if v < 0 {
			v = 0
		} else {
			v = g.highest
		}
	}
	atomic.AddInt64(&c.c[g.index(v)], 1)
}

// shard pads its pointer to a cache line so that shards used by different
// cores do not share one.
type shard struct {
	p atomic.Pointer[counts]
	_ [56]byte
}

// Recorder records durations into an HDR histogram. It is safe for concurrent
// use: Record spreads goroutines over per-shard histograms that are updated
// with atomic adds (no lock on the hot path), and Snapshot merges them on
// read. A Worker gives one goroutine a histogram of its own.
//
// The zero Recorder is ready to use with the default range and precision
// (1 ns .. 60 s at 3 significant figures); NewRecorder sets others. A nil
// *Recorder records nothing and reads as empty.
type Recorder struct {
	once   sync.Once // sets geo, shards and mask
	geo    geometry
	shards []shard
	mask   uintptr

	mu      sync.Mutex // guards workers and merged
	workers []*counts
	merged  *hdrhistogram.Histogram
}

// NewRecorder returns an empty Recorder with the range and precision of cfg
// (nil means 1 ns .. 60 s at 3 significant figures). The error wraps
// ErrInvalidConfig when Highest < 2*Lowest, a field is negative or
// SignificantFigures is outside 1..5.
//
// Memory: each shard or worker that records allocates one histogram, about
// 221 KB with the defaults; shards are allocated on first use.
func NewRecorder(cfg *RecorderConfig) (*Recorder, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return nil, err
	}
	r := &Recorder{}
	r.once.Do(func() { r.setUp(g) })
	return r, nil
}

func (r *Recorder) setUp(g geometry) {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) && n < 64 {
		n <<= 1
	}
	r.geo, r.shards, r.mask = g, make([]shard, n), uintptr(n-1)
}

// sibling returns an empty Recorder with r's range and precision.
func (r *Recorder) sibling() *Recorder {
	r.init()
	s := &Recorder{}
	s.once.Do(func() { s.setUp(r.geo) })
	return s
}

// init sets up a zero Recorder with the defaults.
func (r *Recorder) init() {
	r.once.Do(func() {
		g, _ := newGeometry(nil) // the defaults are valid
		r.setUp(g)
	})
}

// config returns the effective range and precision of the Recorder.
func (r *Recorder) config() RecorderConfig {
	r.init()
	return RecorderConfig{
		Lowest:             time.Duration(r.geo.lowest),
		Highest:            time.Duration(r.geo.highest),
		SignificantFigures: r.geo.sigFigs,
	}
}

// Record records one duration. It is safe for concurrent use. A duration
// above the Recorder's Highest is recorded as Highest, and a negative one as
// zero; both are counted by OutOfRange.
func (r *Recorder) Record(d time.Duration) {
	if r == nil {
		return
	}
	r.init()
	// The shard is chosen from the address of a local variable, that is from
	// the calling goroutine's stack: a goroutine tends to keep its shard, and
	// goroutines running on different cores rarely share one, so the atomic
	// adds stay uncontended without goroutine-local storage or a lock.
	var anchor byte
	h := uint64(uintptr(unsafe.Pointer(&anchor))>>13) * 0x9E3779B97F4A7C15
	s := &r.shards[uintptr(h>>40)&r.mask]
	c := s.p.Load()
	if c == nil {
		c = r.allocShard(s)
	}
	r.geo.record(c, d)
}

func (r *Recorder) allocShard(s *shard) *counts {
	c := &counts{c: make([]int64, r.geo.countsLen)}
	if s.p.CompareAndSwap(nil, c) {
		return c
	}
	return s.p.Load()
}

// Worker is a recording handle with a histogram of its own, for one goroutine
// that records at a high rate (a load generator's worker, for example). Its
// Record is not safe for concurrent use by several goroutines, but it is safe
// concurrently with the Recorder's Snapshot, Summary and Merge, and its
// values appear in them. Get one from Recorder.Worker: the zero Worker, and a
// nil one, record nothing.
type Worker struct {
	geo *geometry
	c   *counts
}

// Worker returns a new recording handle for one goroutine. It allocates one
// histogram (about 221 KB with the default range), which stays part of the
// Recorder for the Recorder's lifetime: create workers per goroutine, not per
// value.
func (r *Recorder) Worker() *Worker {
	if r == nil {
		return nil
	}
	r.init()
	c := &counts{c: make([]int64, r.geo.countsLen)}
	r.mu.Lock()
	r.workers = append(r.workers, c)
	r.mu.Unlock()
	return &Worker{geo: &r.geo, c: c}
}

// Record records one duration, with the same range handling as
// Recorder.Record.
func (w *Worker) Record(d time.Duration) {
	if w == nil || w.c == nil {
		return
	}
	w.geo.record(w.c, d)
}

// each calls f for every histogram shard the Recorder has, with r.mu held.
func (r *Recorder) each(f func(*counts)) {
	for i := range r.shards {
		if c := r.shards[i].p.Load(); c != nil {
			f(c)
		}
	}
	for _, c := range r.workers {
		f(c)
	}
}

// Snapshot returns a copy of everything recorded so far as one
// hdrhistogram.Histogram with the Recorder's range and precision. The copy is
// the caller's; values recorded concurrently with the call may or may not be
// included. Use hdrhistogram-go's own API on it: ValueAtQuantile, Encode
// (the "HISTFAAA..." form HdrHistogram's tools read), PercentilesPrint (the
// .hgrm form) and HistogramLogWriter (the interval log). A nil Recorder
// gives an empty histogram with the default range.
func (r *Recorder) Snapshot() *hdrhistogram.Histogram {
	if r == nil {
		return hdrhistogram.New(int64(defaultLowest), int64(defaultHighest), defaultSignificantFigures)
	}
	r.init()
	sum := make([]int64, r.geo.countsLen)
	r.mu.Lock()
	r.each(func(c *counts) {
		for i := range c.c {
			if v := atomic.LoadInt64(&c.c[i]); v != 0 {
				sum[i] += v
			}
		}
	})
	merged := r.merged
	if merged != nil {
		merged = merged.Clone()
	}
	r.mu.Unlock()
	h := hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue:  r.geo.lowest,
		HighestTrackableValue: r.geo.highest,
		SignificantFigures:    int64(r.geo.sigFigs),
		Counts:                sum,
	})
	if merged != nil {
		h.Merge(merged)
	}
	return h
}

// Count returns the number of values recorded so far (including merged ones).
func (r *Recorder) Count() int64 {
	if r == nil {
		return 0
	}
	var n int64
	r.mu.Lock()
	defer r.mu.Unlock()
	r.each(func(c *counts) {
		for i := range c.c {
			n += atomic.LoadInt64(&c.c[i])
		}
	})
	if r.merged != nil {
		n += r.merged.TotalCount()
	}
	return n
}

// OutOfRange returns how many recorded durations were outside 0..Highest and
// were recorded as the nearest bound instead.
func (r *Recorder) OutOfRange() int64 {
	if r == nil {
		return 0
	}
	var n int64
	r.mu.Lock()
	defer r.mu.Unlock()
	r.each(func(c *counts) { n += atomic.LoadInt64(&c.outOfRange) })
	return n
}

// Merge adds every value of h to the Recorder and returns how many values it
// could not add because they lie outside the Recorder's range. h is only read;
// it must not be modified during the call. Use r.Merge(other.Snapshot()) to
// merge another Recorder. A nil Recorder adds nothing and reports every
// value as dropped.
func (r *Recorder) Merge(h *hdrhistogram.Histogram) (dropped int64) {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	if r == nil {
		return h.TotalCount()
	}
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.merged == nil {
		r.merged = hdrhistogram.New(r.geo.lowest, r.geo.highest, r.geo.sigFigs)
	}
	return r.merged.Merge(h)
}

// Summary returns sockperf's statistics over everything recorded so far,
// computed from the histogram (see SummarizeHistogram), with a confidence
// interval at level percent (0, or outside (0, 100), means 99).
func (r *Recorder) Summary(level float64) Summary {
	return SummarizeHistogram(r.Snapshot(), level)
}
