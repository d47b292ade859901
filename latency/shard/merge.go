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

// Saturation thresholds: the zero MergeConfig fields' values.
const (
	// DefaultCPUShare: a generator that used 90 % of its CPU limit, or
	// whose host's CPUs were 90 % busy, is saturated.
	DefaultCPUShare = 0.9
	// DefaultThrottledShare: a generator whose cgroup quota throttled it in
	// 5 % of the enforcement periods is saturated.
	DefaultThrottledShare = 0.05
	// DefaultLatenessShare: an open-loop generator whose send lateness p99
	// is 10 % of its response time p99 or more is saturated.
	DefaultLatenessShare = 0.1
)

// MergeConfig sets the saturation thresholds. A nil *MergeConfig means the
// defaults; a zero field means its default.
type MergeConfig struct {
	CPUShare       float64
	ThrottledShare float64
	LatenessShare  float64
}

func (c *MergeConfig) withDefaults() MergeConfig {
	var m MergeConfig
	if c != nil {
		m = *c
	}
	if m.CPUShare <= 0 {
		m.CPUShare = DefaultCPUShare
	}
	if m.ThrottledShare <= 0 {
		m.ThrottledShare = DefaultThrottledShare
	}
	if m.LatenessShare <= 0 {
		m.LatenessShare = DefaultLatenessShare
	}
	return m
}

// Merged is one result from many shards.
type Merged struct {
	Tool   string `json:"tool"`
	Shards int    `json:"shards"`
	// WindowStart and WindowEnd bound the common window; Intervals is the
	// number of grid intervals in it (every shard measured each of them
	// whole) and Window their total length.
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
	// OutOfRange counts operations longer than HistogramHighest, held in
	// the histogram as HistogramHighest.
	OutOfRange int64 `json:"out_of_range"`
	// StartSkew is the spread of the merged shards' start times (their
	// clocks' offsets included).
	StartSkew time.Duration `json:"-"`
	Rows      []Row         `json:"rows"`
	// Missing lists the shard numbers of which no result was given;
	// Failed the shards whose result says they failed.
	Missing []int         `json:"missing,omitempty"`
	Failed  []FailedShard `json:"failed,omitempty"`
	// Unreadable lists the files MergeFiles could not read or decode.
	Unreadable []FailedFile `json:"unreadable,omitempty"`
}

// FailedShard is a shard left out of the merge and why.
type FailedShard struct {
	Shard int    `json:"shard"`
	Host  string `json:"host,omitempty"`
	Error string `json:"error"`
}

// FailedFile is a file MergeFiles could not use.
type FailedFile struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Row is one shard's part of the merged window.
type Row struct {
	Shard      int             `json:"shard"`
	Host       string          `json:"host,omitempty"`
	Start      time.Time       `json:"start"`
	Skew       time.Duration   `json:"-"` // Start after the earliest shard's
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

// MergeFiles decodes the result files at paths and merges them; a file it
// cannot read or decode is listed in Unreadable and makes the merge
// incomplete.
func MergeFiles(paths []string, cfg *MergeConfig) (*Merged, error) {
	var rs []*Result
	var bad []FailedFile
	for _, p := range paths {
		r, err := readFile1(p)
		if err != nil {
			bad = append(bad, FailedFile{Path: p, Error: err.Error()})
			continue
		}
		rs = append(rs, r)
	}
	m, err := Merge(rs, cfg)
	m.Unreadable = bad
	if len(bad) > 0 && (err == nil || !errors.Is(err, ErrIncomplete)) {
		err = errors.Join(err, fmt.Errorf("%w: %d unreadable file(s): %s", ErrIncomplete, len(bad), bad[0].Path))
	}
	return m, err
}

func readFile1(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	defer f.Close()
	return Decode(f)
}

// Merge merges the shards' results over their common window. The result is
// never nil. Its error wraps ErrInvalid for no results or a nil one,
// ErrMismatch for results of different counts, intervals or tools, or a
// shard given twice, ErrNoWindow when no interval was measured by every
// good shard, and ErrIncomplete when a shard is missing or failed: Merged
// then names them and holds the merge of the others.
func Merge(results []*Result, cfg *MergeConfig) (*Merged, error) {
	m := &Merged{Histogram: newHistogram()}
	good, err := m.sort(results)
	if err != nil {
		return m, err
	}
	window := commonWindow(good)
	if len(good) > 0 && len(window) == 0 {
		return m, fmt.Errorf("%w: the %d good shards never measured one whole %v interval together", ErrNoWindow, len(good), good[0].Interval)
	}
	c := cfg.withDefaults()
	m.sum(good, window, c)
	var incomplete error
	if len(m.Missing) > 0 || len(m.Failed) > 0 {
		incomplete = fmt.Errorf("%w: %s", ErrIncomplete, m.describeGaps())
	}
	if len(good) == 0 {
		return m, errors.Join(incomplete, fmt.Errorf("%w: no shard succeeded", ErrNoWindow))
	}
	return m, incomplete
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(HistogramLowest), int64(HistogramHighest), HistogramSignificantFigures)
}

// sort checks the results against each other and returns the good ones,
// filling Missing and Failed.
func (m *Merged) sort(results []*Result) ([]*Result, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: Merge: no results", ErrInvalid)
	}
	seen := map[int]bool{}
	var good []*Result
	for i, r := range results {
		if r == nil {
			return nil, fmt.Errorf("%w: Merge: result %d is nil", ErrInvalid, i)
		}
		if err := r.Shard.Validate(); err != nil {
			return nil, err
		}
		first := results[0]
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
	m.Tool, m.Shards = results[0].Tool, results[0].Shard.Count
	for i := range m.Shards {
		if !seen[i] {
			m.Missing = append(m.Missing, i)
		}
	}
	slices.SortFunc(m.Failed, func(a, b FailedShard) int { return a.Shard - b.Shard })
	slices.SortFunc(good, func(a, b *Result) int { return a.Shard.Index - b.Shard.Index })
	return good, nil
}

func (m *Merged) describeGaps() string {
	var parts []string
	if len(m.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("shard(s) %v of %d missing", m.Missing, m.Shards))
	}
	for _, f := range m.Failed {
		parts = append(parts, fmt.Sprintf("shard %d failed: %s", f.Shard, f.Error))
	}
	return strings.Join(parts, "; ")
}

// whole returns a shard's intervals that cover a whole grid interval,
// keyed by the grid interval's start (Unix ns).
func whole(r *Result) map[int64]*Interval {
	out := map[int64]*Interval{}
	iv := int64(r.Interval)
	for i := range r.Intervals {
		x := &r.Intervals[i]
		s, e := x.Start.UnixNano(), x.End.UnixNano()
		if s%iv == 0 && e-s == iv {
			out[s] = x
		}
	}
	return out
}

// commonWindow returns the grid intervals (their starts, in order) that
// every good shard measured whole.
func commonWindow(good []*Result) []int64 {
	if len(good) == 0 {
		return nil
	}
	var common []int64
	maps := make([]map[int64]*Interval, len(good))
	for i, r := range good {
		maps[i] = whole(r)
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

// sum fills m from the good shards over window.
func (m *Merged) sum(good []*Result, window []int64, c MergeConfig) {
	if len(window) == 0 {
		return
	}
	iv := good[0].Interval
	m.Intervals, m.Window = len(window), time.Duration(len(window))*iv
	m.WindowStart, m.WindowEnd = time.Unix(0, window[0]).UTC(), time.Unix(0, window[len(window)-1]).Add(iv).UTC()
	earliest, latest := good[0].Start, good[0].Start
	for _, r := range good {
		earliest, latest = minTime(earliest, r.Start), maxTime(latest, r.Start)
	}
	m.StartSkew = latest.Sub(earliest)
	for _, r := range good {
		row := Row{Shard: r.Shard.Index, Host: r.Host, Start: r.Start, Skew: r.Start.Sub(earliest), CPU: r.CPU}
		h := newHistogram()
		byStart := whole(r)
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
		row.Latency = latency.SummarizeHistogram(h, nil)
		row.Saturated, row.Reason = verdict(r, c)
		m.Histogram.Merge(h)
		m.Count += row.Count
		m.Errors += row.Errors
		m.OutOfRange += row.OutOfRange
		m.Rows = append(m.Rows, row)
	}
	m.OpsPerSec = float64(m.Count) / m.Window.Seconds()
	m.Latency = latency.SummarizeHistogram(m.Histogram, nil)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// verdict judges whether a shard's generator may have been the limit.
func verdict(r *Result, c MergeConfig) (bool, string) {
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
