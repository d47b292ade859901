package shard

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// Saturation thresholds: the zero Config fields' values.
const (
	// defaultCPUShare: a generator that used 90 % of its CPU limit, or
	// whose host's CPUs were 90 % busy, is saturated.
	defaultCPUShare = 0.9
	// defaultThrottledShare: a generator whose cgroup quota throttled it in
	// 5 % of the enforcement periods is saturated.
	defaultThrottledShare = 0.05
	// defaultLatenessShare: an open-loop generator whose send lateness p99
	// is 10 % of its response time p99 or more is saturated.
	defaultLatenessShare = 0.1
)

// Config is a sharded run's settings: how Run measures one shard (Shard,
// StartAt, Duration, Interval) and how Merge judges the shards' results
// (StartTolerance and the saturation shares). Every shard of a run uses
// the same StartAt, Duration and Interval. A nil *Config means the
// defaults (for Run, a nil one is refused: Duration is required); a zero
// field means its default; a field out of range is an error naming it.
type Config struct {
	// Shard is this shard's place; the zero Spec is an unsharded run
	// (shard 0 of 1). Run only.
	Shard Spec
	// StartAt is the common wall-clock start; Run waits for it and refuses
	// one already past (ErrPastStart). Zero starts at once. Put it on the
	// grid (a whole second for 1 s intervals), so that the shards' first
	// intervals are whole. Run only.
	StartAt time.Time
	// Duration is how long the shard measures from its start: operations
	// that end later are not recorded. Required by Run (at most 86,400
	// intervals); the load should run as long.
	Duration time.Duration
	// Interval is the grid's interval: zero means 1 s;
	// otherwise 1 ms..1 h. Run only; Merge takes the results'.
	Interval time.Duration
	// StartTolerance is how far from a grid line a shard's first (or last)
	// interval may begin (or end) and still count as whole in Merge: the
	// shards that Run started together wake a few microseconds after
	// StartAt. Zero means the smaller of 1 % of the interval and 10 ms;
	// at most a tenth of the interval. The merged count and rate then
	// leave out at most that part of the edge intervals, and StartSkew
	// says how late the shards started. Merge only.
	StartTolerance time.Duration
	// CPUShare, ThrottledShare and LatenessShare are the saturation
	// thresholds (0 means 0.9, 0.05 and 0.1: a generator that used 90 % of
	// its CPU limit or whose host was 90 % busy, that its cgroup quota
	// throttled in 5 % of the periods, or whose send lateness p99 is 10 %
	// of its response time p99, is saturated; otherwise above 0, at most
	// 1). Merge only.
	CPUShare       float64
	ThrottledShare float64
	LatenessShare  float64
}

// mergeSettings validates the fields Merge uses and fills in defaults; the
// tolerance's default and bound depend on the interval.
func (c *Config) mergeSettings(iv time.Duration) (Config, error) {
	var m Config
	if c != nil {
		m = *c
	}
	for _, f := range []struct {
		name string
		v    *float64
		def  float64
	}{{"CPUShare", &m.CPUShare, defaultCPUShare}, {"ThrottledShare", &m.ThrottledShare, defaultThrottledShare},
		{"LatenessShare", &m.LatenessShare, defaultLatenessShare}} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case !(*f.v > 0 && *f.v <= 1): // NaN too
			return m, fmt.Errorf("%w Config.%s %v: must be above 0 and at most 1 (0 means %v)", ErrInvalid, f.name, *f.v, f.def)
		}
	}
	switch {
	case m.StartTolerance < 0 || m.StartTolerance > iv/10:
		return m, fmt.Errorf("%w Config.StartTolerance %v: must be 0..%v (a tenth of the %v interval)", ErrInvalid, m.StartTolerance, iv/10, iv)
	case m.StartTolerance == 0:
		m.StartTolerance = min(iv/100, 10*time.Millisecond)
	}
	return m, nil
}

// Merged is one result from many shards.
type Merged struct {
	Tool   string `json:"tool"`
	Shards int    `json:"shards"`
	// WindowStart and WindowEnd bound the common window; Intervals is the
	// number of grid intervals in it (every shard measured each of them
	// whole, within Config.StartTolerance) and Window their total length.
	WindowStart time.Time     `json:"window_start"`
	WindowEnd   time.Time     `json:"window_end"`
	Intervals   int           `json:"intervals"`
	Window      time.Duration `json:"-"`
	// Count and Errors are summed over the shards and the window;
	// OpsPerSec is Count per second of Window.
	Count     int64   `json:"count"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency summarises Histogram, the sum of every shard's interval
	// histograms in the window.
	Latency   latency.Summary         `json:"latency"`
	Histogram *hdrhistogram.Histogram `json:"-"`
	// OutOfRange counts operations longer than 60 s (the histograms'
	// highest value), held in the histogram as 60 s.
	OutOfRange int64 `json:"out_of_range"`
	// StartSkew is how late the last merged shard started: after the
	// shards' common StartAt when they share one, else after the earliest
	// shard (the hosts' clock offsets included).
	StartSkew time.Duration `json:"-"`
	Rows      []Row         `json:"rows"`
	// Missing lists the shard numbers of which no result was given;
	// Failed the shards whose result says they failed.
	Missing []int         `json:"missing,omitempty"`
	Failed  []FailedShard `json:"failed,omitempty"`
	// Unreadable lists the files MergeFiles could not read or decode, each
	// with its error (Shard -1: a file that cannot be read cannot say).
	Unreadable []FailedShard `json:"unreadable,omitempty"`
}

// FailedShard is a shard left out of the merge and why: a result that
// says it failed, or a file that could not be read (Path set, Shard -1).
type FailedShard struct {
	Shard int    `json:"shard"`
	Host  string `json:"host,omitempty"`
	Path  string `json:"path,omitempty"`
	Error string `json:"error"`
}

// Row is one shard's part of the merged window.
type Row struct {
	Shard      int             `json:"shard"`
	Host       string          `json:"host,omitempty"`
	Start      time.Time       `json:"start"`
	Skew       time.Duration   `json:"-"` // Start after StartAt (or the earliest shard's), as in StartSkew
	Count      int64           `json:"count"`
	Errors     int64           `json:"errors"`
	OpsPerSec  float64         `json:"ops_per_sec"`
	Latency    latency.Summary `json:"latency"`
	OutOfRange int64           `json:"out_of_range"`
	CPU        *CPU            `json:"-"`
	// Saturated says the generator may have been the limit, and Reason
	// why (or, when not saturated, what was checked).
	Saturated bool   `json:"saturated"`
	Reason    string `json:"saturation"`
}

// MergeFiles decodes the result files at paths and merges them as Merge
// does; a file it cannot read or decode is listed in Unreadable with its
// error and makes the merge incomplete (ErrIncomplete, naming the file and
// its error). No paths is an error wrapping ErrInvalid.
func MergeFiles(paths []string, cfg *Config) (*Merged, error) {
	if len(paths) == 0 {
		return &Merged{Histogram: newHistogram()}, fmt.Errorf("%w MergeFiles: no paths", ErrInvalid)
	}
	var rs []*Result
	var bad []FailedShard
	for _, p := range paths {
		r, err := readFile1(p)
		if err != nil {
			bad = append(bad, FailedShard{Shard: -1, Path: p, Error: err.Error()})
			continue
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		m := &Merged{Histogram: newHistogram(), Unreadable: bad}
		return m, fmt.Errorf("%w: no readable result: %s", ErrIncomplete, m.describeGaps())
	}
	return merge(rs, cfg, bad)
}

func readFile1(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	defer f.Close()
	return Decode(f)
}

// Merge merges the shards' results over their common window: the grid
// intervals that every good shard measured whole, or within
// cfg.StartTolerance of whole. The result is never nil. Merge checks each
// result as strictly as Decode checks a file. Its error wraps ErrInvalid
// for no results, a nil or malformed one (counts that their histograms do
// not hold, intervals off the grid, out of order or overlapping) or a cfg
// field out of range, each named; ErrMismatch for results of different
// counts, intervals, tools or histogram settings, or a shard given twice; ErrNoWindow when no interval was measured by every good
// shard; and ErrIncomplete when a shard is missing or failed: Merged then
// names them and holds the merge of the others.
func Merge(results []*Result, cfg *Config) (*Merged, error) {
	return merge(results, cfg, nil)
}

func merge(results []*Result, cfg *Config, unreadable []FailedShard) (*Merged, error) {
	m := &Merged{Histogram: newHistogram(), Unreadable: unreadable}
	good, err := m.sort(results)
	if err != nil {
		return m, err
	}
	c, err := cfg.mergeSettings(results[0].Interval)
	if err != nil {
		return m, err
	}
	window := commonWindow(good, c.StartTolerance)
	if len(good) > 0 && len(window) == 0 {
		return m, errors.Join(m.gaps(), fmt.Errorf("%w: the %d good shards never measured one whole %v interval together (start skew %v, tolerance %v)",
			ErrNoWindow, len(good), good[0].Interval, startSkew(good), c.StartTolerance))
	}
	m.sum(good, window, c)
	if len(good) == 0 {
		return m, errors.Join(m.gaps(), fmt.Errorf("%w: no shard succeeded", ErrNoWindow))
	}
	return m, m.gaps()
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(histogramLowest), int64(histogramHighest), histogramSigFigs)
}

// sort checks the results, each alone and against each other, and returns
// the good ones, filling Tool, Shards, Missing and Failed.
func (m *Merged) sort(results []*Result) ([]*Result, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w Merge: no results", ErrInvalid)
	}
	for i, r := range results {
		if r == nil {
			return nil, fmt.Errorf("%w Merge: results[%d] is nil", ErrInvalid, i)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("%w (results[%d])", err, i)
		}
	}
	seen := map[int]bool{}
	var good []*Result
	first := results[0]
	for _, r := range results {
		switch {
		case r.Shard.Count != first.Shard.Count:
			return nil, fmt.Errorf("%w: shard %s and shard %s count differently", ErrMismatch, first.Shard, r.Shard)
		case r.Interval != first.Interval:
			return nil, fmt.Errorf("%w: shard %s's interval %v, shard %s's %v", ErrMismatch, first.Shard, first.Interval, r.Shard, r.Interval)
		case r.Tool != first.Tool:
			return nil, fmt.Errorf("%w: shard %s is %q, shard %s %q", ErrMismatch, first.Shard, first.Tool, r.Shard, r.Tool)
		case seen[r.Shard.Index]:
			return nil, fmt.Errorf("%w: shard %s given twice", ErrMismatch, r.Shard)
		}
		seen[r.Shard.Index] = true
		if r.Error != "" {
			m.Failed = append(m.Failed, FailedShard{Shard: r.Shard.Index, Host: r.Host, Error: r.Error})
			continue
		}
		good = append(good, r)
	}
	m.Tool, m.Shards = first.Tool, first.Shard.Count
	for i := range m.Shards {
		if !seen[i] {
			m.Missing = append(m.Missing, i)
		}
	}
	slices.SortFunc(m.Failed, func(a, b FailedShard) int { return a.Shard - b.Shard })
	slices.SortFunc(good, func(a, b *Result) int { return a.Shard.Index - b.Shard.Index })
	return good, nil
}

// gaps returns the error wrapping ErrIncomplete that names the shards left
// out, or nil.
func (m *Merged) gaps() error {
	if len(m.Missing) == 0 && len(m.Failed) == 0 && len(m.Unreadable) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrIncomplete, m.describeGaps())
}

func (m *Merged) describeGaps() string {
	var parts []string
	switch {
	case len(m.Missing) > 0 && len(m.Unreadable) > 0:
		parts = append(parts, fmt.Sprintf("shard(s) %v of %d without a readable result", m.Missing, m.Shards))
	case len(m.Missing) > 0:
		parts = append(parts, fmt.Sprintf("shard(s) %v of %d missing", m.Missing, m.Shards))
	}
	for _, f := range m.Unreadable {
		parts = append(parts, fmt.Sprintf("%s unreadable: %s", f.Path, f.Error))
	}
	for _, f := range m.Failed {
		parts = append(parts, fmt.Sprintf("shard %d failed: %s", f.Shard, f.Error))
	}
	return strings.Join(parts, "; ")
}

// whole returns a shard's intervals that cover a whole grid interval, or
// all of it but at most tol at either end, keyed by the grid interval's
// start (Unix ns). Result.check keeps every interval within one grid
// interval.
func whole(r *Result, tol time.Duration) map[int64]*Interval {
	out := map[int64]*Interval{}
	iv := int64(r.Interval)
	for i := range r.Intervals {
		x := &r.Intervals[i]
		s, e := x.Start.UnixNano(), x.End.UnixNano()
		gs := floorDiv(s, iv) * iv
		if s-gs <= int64(tol) && gs+iv-e <= int64(tol) {
			out[gs] = x
		}
	}
	return out
}

// commonWindow returns the grid intervals (their starts, in order) that
// every good shard measured whole.
func commonWindow(good []*Result, tol time.Duration) []int64 {
	if len(good) == 0 {
		return nil
	}
	var common []int64
	maps := make([]map[int64]*Interval, len(good))
	for i, r := range good {
		maps[i] = whole(r, tol)
	}
	for s := range maps[0] {
		in := true
		for _, w := range maps[1:] {
			if _, ok := w[s]; !ok {
				in = false
				break
			}
		}
		if in {
			common = append(common, s)
		}
	}
	slices.Sort(common)
	return common
}

// skewBase is the time the shards' start skew is measured from: their
// common StartAt, or the earliest start when they have none or were given
// different ones (shards started apart merge over their overlap).
func skewBase(good []*Result) time.Time {
	earliest, common := good[0].Start, !good[0].StartAt.IsZero()
	for _, r := range good {
		earliest = minTime(earliest, r.Start)
		common = common && r.StartAt.Equal(good[0].StartAt)
	}
	if common {
		return good[0].StartAt
	}
	return earliest
}

// startSkew is how late the last shard started after skewBase.
func startSkew(good []*Result) time.Duration {
	base := skewBase(good)
	var skew time.Duration
	for _, r := range good {
		skew = max(skew, r.Start.Sub(base))
	}
	return skew
}

// sum fills m from the good shards over window.
func (m *Merged) sum(good []*Result, window []int64, c Config) {
	if len(window) == 0 {
		return
	}
	iv := good[0].Interval
	m.Intervals, m.Window = len(window), time.Duration(len(window))*iv
	m.WindowStart, m.WindowEnd = time.Unix(0, window[0]).UTC(), time.Unix(0, window[len(window)-1]).Add(iv).UTC()
	base := skewBase(good)
	m.StartSkew = startSkew(good)
	for _, r := range good {
		row := Row{Shard: r.Shard.Index, Host: r.Host, Start: r.Start, Skew: r.Start.Sub(base), CPU: r.CPU}
		h := newHistogram()
		byStart := whole(r, c.StartTolerance)
		for _, s := range window {
			x := byStart[s]
			row.Count += x.Count
			row.Errors += x.Errors
			row.OutOfRange += x.OutOfRange
			if x.Histogram != nil {
				h.Merge(x.Histogram)
			}
		}
		row.OpsPerSec = float64(row.Count) / m.Window.Seconds()
		row.Latency = latency.SummarizeHistogram(h, 0)
		row.Saturated, row.Reason = verdict(r, c)
		m.Histogram.Merge(h)
		m.Count += row.Count
		m.Errors += row.Errors
		m.OutOfRange += row.OutOfRange
		m.Rows = append(m.Rows, row)
	}
	m.OpsPerSec = float64(m.Count) / m.Window.Seconds()
	m.Latency = latency.SummarizeHistogram(m.Histogram, 0)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// verdict judges whether a shard's generator may have been the limit.
func verdict(r *Result, c Config) (bool, string) {
	var checked []string
	if cpu := r.CPU; cpu != nil && cpu.LimitCores > 0 {
		used := cpu.UsedCores()
		if used >= c.CPUShare*cpu.LimitCores {
			return true, fmt.Sprintf("CPU %.2f of %.2f cores (%s), at or above %.0f %%", used, cpu.LimitCores, cpu.LimitSource, 100*c.CPUShare)
		}
		if cpu.Periods != nil && cpu.Throttled != nil && *cpu.Periods > 0 {
			share := float64(*cpu.Throttled) / float64(*cpu.Periods)
			if share >= c.ThrottledShare {
				return true, fmt.Sprintf("throttled by its cgroup quota (%.2f cores, %s) in %d of %d periods (%.0f %%, limit %.0f %%)",
					cpu.LimitCores, cpu.LimitSource, *cpu.Throttled, *cpu.Periods, 100*share, 100*c.ThrottledShare)
			}
		}
		if cpu.HostBusy != nil && *cpu.HostBusy >= c.CPUShare {
			return true, fmt.Sprintf("the host's CPUs were %.0f %% busy (limit %.0f %%), shared with whatever else runs there; the shard itself used %.2f of %.2f cores",
				100**cpu.HostBusy, 100*c.CPUShare, used, cpu.LimitCores)
		}
		checked = append(checked, fmt.Sprintf("CPU %.2f of %.2f cores (%s)", used, cpu.LimitCores, cpu.LimitSource))
	} else {
		checked = append(checked, "CPU unknown")
	}
	if r.SendLatenessP99 != nil && r.ResponseP99 != nil && *r.ResponseP99 > 0 {
		share := float64(*r.SendLatenessP99) / float64(*r.ResponseP99)
		if share >= c.LatenessShare {
			return true, fmt.Sprintf("send lateness p99 %v is %.0f %% of response p99 %v (limit %.0f %%)",
				*r.SendLatenessP99, 100*share, *r.ResponseP99, 100*c.LatenessShare)
		}
		checked = append(checked, fmt.Sprintf("send lateness p99 %.0f %% of response p99", 100*share))
	}
	return false, "not saturated: " + strings.Join(checked, ", ")
}
