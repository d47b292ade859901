package shard

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/benchhist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSpecAndPart(t *testing.T) {
	s, err := ParseSpec("2/4")
	require.NoError(t, err)
	assert.Equal(t, Spec{Index: 2, Count: 4}, s)
	for _, bad := range []string{"", "4/4", "-1/4", "1/0", "a/b", "1", "1/10001"} {
		_, err := ParseSpec(bad)
		assert.ErrorIs(t, err, ErrInvalid, bad)
	}
	// Parts tile [0, n) in order, differing by one at most.
	for _, n := range []int{0, 1, 3, 10, 10000} {
		next := 0
		for i := range 4 {
			lo, hi := Spec{Index: i, Count: 4}.Part(n)
			assert.Equal(t, next, lo)
			assert.LessOrEqual(t, hi-lo, n/4+1)
			next = hi
		}
		assert.Equal(t, n, next)
	}
	lo, hi := Spec{}.Part(10)
	assert.Equal(t, []int{0, 10}, []int{lo, hi}, "the zero Spec is an unsharded run")
	lo, hi = Spec{Index: 3, Count: 2}.Part(10)
	assert.Zero(t, lo+hi)
}

func TestWaitUntilRefusesThePast(t *testing.T) {
	past := time.Now().Add(-3 * time.Second)
	_, _, err := waitUntil(context.Background(), past, time.Now)
	require.ErrorIs(t, err, ErrPastStart)
	assert.Contains(t, err.Error(), "ago")
	//nolint:staticcheck // a nil context is misuse this checks
	_, _, err = waitUntil(nil, time.Time{}, time.Now) //lint:ignore SA1012 misuse under test
	assert.Error(t, err)

	at := time.Now().Add(50 * time.Millisecond)
	started, late, err := waitUntil(context.Background(), at, time.Now)
	require.NoError(t, err)
	assert.False(t, started.Before(at), "woke before the start time")
	assert.GreaterOrEqual(t, late, time.Duration(0))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = waitUntil(ctx, time.Now().Add(time.Hour), time.Now)
	assert.ErrorIs(t, err, context.Canceled)
}

// fakeShard builds a result of a shard that measured from start for n
// intervals of iv, each operation taking the same latency, per interval.
func fakeShard(t *testing.T, sp Spec, start time.Time, d, iv time.Duration, perInterval int, lat time.Duration) *Result {
	t.Helper()
	rec, err := newRecorder(start, d, iv)
	require.NoError(t, err)
	// One operation per slot, spread evenly over the measurement.
	n := int(d/iv) * perInterval
	for i := range n {
		at := start.Add(time.Duration(i) * d / time.Duration(n))
		rec.record(at, lat, nil)
	}
	rec.record(start, 0, errors.New("refused"))
	return &Result{Tool: "test", Shard: sp, Host: "h", Start: start, End: start.Add(d), Interval: iv,
		Intervals: rec.intervals(start.Add(d))}
}

func TestRecorderGridAndOutside(t *testing.T) {
	start := time.Unix(100, 250_000_000) // a quarter into a 1 s interval
	rec, err := newRecorder(start, 2*time.Second, time.Second)
	require.NoError(t, err)
	rec.record(start.Add(-time.Millisecond), time.Millisecond, nil)
	rec.record(start.Add(2*time.Second), time.Millisecond, nil)
	rec.record(start.Add(500*time.Millisecond), 90*time.Second, nil) // out of range
	rec.record(start.Add(time.Second), time.Millisecond, nil)
	rec.record(start.Add(1900*time.Millisecond), time.Hour, errors.New("x"))
	ivs := rec.intervals(time.Time{})
	require.Len(t, ivs, 3)
	assert.Equal(t, time.Unix(100, 250_000_000).UTC(), ivs[0].Start)
	assert.Equal(t, time.Unix(101, 0).UTC(), ivs[0].End)
	assert.Equal(t, time.Unix(102, 250_000_000).UTC(), ivs[2].End)
	assert.Equal(t, int64(1), ivs[1].Count)
	assert.Equal(t, int64(1), ivs[0].OutOfRange)
	assert.Equal(t, int64(1), ivs[2].Errors)
	assert.Zero(t, ivs[2].Count, "a failed operation is not in the histogram")
	assert.Nil(t, ivs[2].Histogram)
	assert.Equal(t, int64(2), rec.outside.Load())
}

// TestNewRecorderRefusesWhatItCannotHold: a duration or interval out of
// range is an error naming the field, never a panic or a huge allocation.
func TestNewRecorderRefusesWhatItCannotHold(t *testing.T) {
	start := time.Unix(100, 0)
	for _, c := range []struct {
		d, iv time.Duration
		field string
	}{
		{0, time.Second, "Config.Duration"},
		{-time.Second, time.Second, "Config.Duration"},
		{math.MaxInt64, time.Second, "Config.Duration"},
		{math.MaxInt64, time.Hour, "Config.Duration"},
		{25 * time.Hour, time.Second, "Config.Duration"},
		{time.Hour, time.Microsecond, "Config.Interval"},
		{time.Hour, 2 * time.Hour, "Config.Interval"},
	} {
		rec, err := newRecorder(start, c.d, c.iv)
		require.ErrorIs(t, err, ErrInvalid, "%v in %v", c.d, c.iv)
		assert.Contains(t, err.Error(), c.field)
		assert.Nil(t, rec)
	}
	_, err := newRecorder(time.Time{}, time.Second, time.Second)
	assert.ErrorIs(t, err, ErrInvalid)
	rec, err := newRecorder(start, 24*time.Hour, time.Second)
	require.NoError(t, err, "a day of 1 s intervals fits")
	assert.Nil(t, rec.buckets[0].rec.Load(), "histograms are allocated on first use")
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := fakeShard(t, Spec{Index: 1, Count: 2}, time.Unix(1000, 5), 3*time.Second, time.Second, 7, 250*time.Microsecond)
	r.StartAt = time.Unix(1000, 0)
	late, resp := 3*time.Microsecond, 400*time.Microsecond
	r.SendLatenessP99, r.ResponseP99 = &late, &resp
	cg, p, th := 2*time.Second, int64(30), int64(3)
	r.CPU = &CPU{Process: time.Second, Cgroup: &cg, Wall: 3 * time.Second, LimitCores: 0.5, LimitSource: "cgroup v1 cpu.cfs_quota_us", Periods: &p, Throttled: &th}
	r.Detail = []byte(`{"a":1}`)
	var buf bytes.Buffer
	require.NoError(t, encode(&buf, r))
	got, err := Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, r.Shard, got.Shard)
	assert.True(t, r.StartAt.Equal(got.StartAt))
	assert.True(t, r.Start.Equal(got.Start))
	assert.Equal(t, r.Interval, got.Interval)
	assert.Equal(t, late, *got.SendLatenessP99)
	assert.Equal(t, *r.CPU.Cgroup, *got.CPU.Cgroup)
	assert.Equal(t, int64(3), *got.CPU.Throttled)
	assert.JSONEq(t, `{"a":1}`, string(got.Detail))
	require.Len(t, got.Intervals, len(r.Intervals))
	for i := range r.Intervals {
		assert.Equal(t, r.Intervals[i].Count, got.Intervals[i].Count)
		assert.True(t, r.Intervals[i].Start.Equal(got.Intervals[i].Start))
		if r.Intervals[i].Histogram != nil {
			assert.True(t, r.Intervals[i].Histogram.Equals(got.Intervals[i].Histogram))
		}
	}
	assert.ErrorIs(t, encode(&buf, nil), ErrInvalid)
}

func TestDecodeRefusesWhatMergeCannotTrust(t *testing.T) {
	r := fakeShard(t, Spec{Index: 0, Count: 1}, time.Unix(1000, 0), 2*time.Second, time.Second, 3, time.Millisecond)
	var buf bytes.Buffer
	require.NoError(t, encode(&buf, r))
	good := buf.String()
	for name, edit := range map[string]func(string) string{
		"format": func(s string) string { return strings.Replace(s, format, "other/1", 1) },
		"shard":  func(s string) string { return strings.Replace(s, `"shard": 0`, `"shard": 5`, 1) },
		"settings": func(s string) string {
			return strings.Replace(s, `"significant_figures": 3`, `"significant_figures": 2`, 1)
		},
		"count":       func(s string) string { return strings.Replace(s, `"count": 3`, `"count": 4`, 1) },
		"json":        func(s string) string { return s[:len(s)/2] },
		"two results": func(s string) string { return s + s },
		"trailing":    func(s string) string { return s + "x" },
		"off the grid": func(s string) string {
			return strings.Replace(s, `"end": "1970-01-01T00:16:41Z"`, `"end": "1970-01-01T00:16:41.5Z"`, 1)
		},
	} {
		_, err := Decode(strings.NewReader(edit(good)))
		assert.Error(t, err, name)
	}
	res, err := Decode(nil)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.NotNil(t, res)
	_, err = Decode(strings.NewReader(good + good))
	assert.ErrorContains(t, err, "trailing data")
	_, err = Decode(strings.NewReader(good + "\n\n"))
	assert.NoError(t, err, "white space after the result is fine")
}

func TestMergeCommonWindowIsTheOverlap(t *testing.T) {
	iv := 100 * time.Millisecond
	t0 := time.Unix(2000, 0)
	// Four shards, each 1 s (10 intervals), started one interval apart
	// and 2 ms after the grid line (beyond the 1 ms tolerance): the
	// overlap is intervals 4..9.
	var rs []*Result
	for i := range 4 {
		start := t0.Add(time.Duration(i)*iv + 2*time.Millisecond)
		rs = append(rs, fakeShard(t, Spec{Index: i, Count: 4}, start, time.Second, iv, 10*(i+1), time.Duration(i+1)*time.Millisecond))
	}
	m, err := Merge(rs, nil)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(4*iv).UTC(), m.WindowStart)
	assert.Equal(t, t0.Add(10*iv).UTC(), m.WindowEnd)
	assert.Equal(t, 6, m.Intervals)
	var want int64
	for _, r := range rs {
		for _, x := range r.Intervals {
			if !x.Start.Before(m.WindowStart) && !x.End.After(m.WindowEnd) {
				want += x.Count
			}
		}
	}
	assert.Equal(t, want, m.Count)
	assert.Equal(t, int64(6*(10+20+30+40)), m.Count)
	assert.Equal(t, m.Count, m.Histogram.TotalCount())
	assert.InDelta(t, float64(m.Count)/0.6, m.OpsPerSec, 1e-6)
	// The merged median is the distribution's, not an average of medians:
	// shard 3 (4 ms) holds 40 % of the operations, shard 2 (3 ms) 30 %.
	assert.InEpsilon(t, float64(3*time.Millisecond), float64(m.Latency.P50), 0.002)
	assert.Equal(t, 3*iv, m.StartSkew, "after the earliest shard: no StartAt")
	require.Len(t, m.Rows, 4)
	assert.Equal(t, int64(60), m.Rows[0].Count)
	assert.Equal(t, 2*iv, m.Rows[2].Skew)
}

func TestMergeNamesMissingAndFailedShards(t *testing.T) {
	t0 := time.Unix(3000, 0)
	a := fakeShard(t, Spec{Index: 0, Count: 3}, t0, 2*time.Second, time.Second, 5, time.Millisecond)
	b := fakeShard(t, Spec{Index: 2, Count: 3}, t0, 2*time.Second, time.Second, 5, time.Millisecond)
	b.Error = "interrupted by SIGTERM"
	m, err := Merge([]*Result{a, b}, nil)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Equal(t, []int{1}, m.Missing)
	require.Len(t, m.Failed, 1)
	assert.Equal(t, 2, m.Failed[0].Shard)
	assert.ErrorContains(t, err, "shard(s) [1] of 3 missing")
	assert.Contains(t, err.Error(), "shard 2 failed: interrupted")
	assert.Equal(t, int64(10), m.Count, "the good shard is still merged (two whole intervals)")

	_, err = Merge([]*Result{a, a}, nil)
	assert.ErrorIs(t, err, ErrMismatch)
	c := fakeShard(t, Spec{Index: 1, Count: 3}, t0, 2*time.Second, 500*time.Millisecond, 5, time.Millisecond)
	_, err = Merge([]*Result{a, c}, nil)
	assert.ErrorIs(t, err, ErrMismatch)
	far := fakeShard(t, Spec{Index: 1, Count: 3}, t0.Add(time.Hour), 2*time.Second, time.Second, 5, time.Millisecond)
	m, err = Merge([]*Result{a, far}, nil)
	assert.ErrorIs(t, err, ErrNoWindow)
	assert.NotNil(t, m)
	m, err = Merge(nil, nil)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.NotNil(t, m)
	_, err = Merge([]*Result{nil}, nil)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestVerdict(t *testing.T) {
	p, th := int64(100), int64(40)
	quota := &CPU{Process: 400 * time.Millisecond, Wall: 2 * time.Second, LimitCores: 0.25, LimitSource: "cgroup v1 cpu.cfs_quota_us", Periods: &p, Throttled: &th}
	sat, why := verdict(&Result{CPU: quota}, defaults(t))
	assert.True(t, sat)
	assert.Contains(t, why, "throttled")
	idle := &CPU{Process: 200 * time.Millisecond, Wall: 2 * time.Second, LimitCores: 2, LimitSource: "cpus"}
	sat, why = verdict(&Result{CPU: idle}, defaults(t))
	assert.False(t, sat, why)
	busy := &CPU{Process: 3900 * time.Millisecond, Wall: 2 * time.Second, LimitCores: 2, LimitSource: "cpus"}
	sat, _ = verdict(&Result{CPU: busy}, defaults(t))
	assert.True(t, sat)
	late, resp := 200*time.Microsecond, time.Millisecond
	sat, why = verdict(&Result{CPU: idle, SendLatenessP99: &late, ResponseP99: &resp}, defaults(t))
	assert.True(t, sat)
	assert.Contains(t, why, "send lateness")
	sat, why = verdict(&Result{}, defaults(t))
	assert.False(t, sat)
	assert.Contains(t, why, "CPU unknown")
}

func defaults(t *testing.T) Config {
	c, err := (*Config)(nil).mergeSettings(time.Second)
	require.NoError(t, err)
	return c
}

func TestCgroupParsing(t *testing.T) {
	v1, acct, v2, err := parseProcCgroup(strings.NewReader("12:cpu,cpuacct:/a/b\n0::/c\n3:memory:/m\nbad\n"))
	require.NoError(t, err)
	assert.Equal(t, "/a/b", v1)
	assert.Equal(t, "/a/b", acct)
	assert.Equal(t, "/c", v2)
	cores, ok := parseV1Quota("25000\n", "100000\n")
	assert.True(t, ok)
	assert.InDelta(t, 0.25, cores, 1e-9)
	_, ok = parseV1Quota("-1", "100000")
	assert.False(t, ok)
	cores, ok = parseV2Max("150000 100000\n")
	assert.True(t, ok)
	assert.InDelta(t, 1.5, cores, 1e-9)
	_, ok = parseV2Max("max 100000")
	assert.False(t, ok)
	pp, th := parseCPUStat("nr_periods 10\nnr_throttled 4\nthrottled_time 5\n")
	assert.Equal(t, int64(10), *pp)
	assert.Equal(t, int64(4), *th)
	assert.Equal(t, 7*time.Microsecond, *parseV2Usage("usage_usec 7\n"))
	assert.Nil(t, parseV1Usage("x"))
}

func TestStartCPU(t *testing.T) {
	s := startCPU()
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	c := s.stop()
	if c == nil {
		t.Skip("no getrusage on this platform")
	}
	assert.Positive(t, c.Wall)
	assert.Positive(t, c.LimitCores)
	assert.NotEmpty(t, c.LimitSource)
	var nilS *cpuSample
	assert.Nil(t, nilS.stop())
}

func TestHistogramLogs(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		h := newHistogram()
		for range 100 {
			require.NoError(t, h.RecordValue(int64((i+1)*1000)))
		}
		p := filepath.Join(dir, "b"+string(rune('0'+i))+".hlog")
		require.NoError(t, benchhist.WriteLog(p, "BenchmarkX", h))
		paths = append(paths, p)
	}
	h, dropped, err := MergeHistogramLogs(paths...)
	require.NoError(t, err)
	assert.Zero(t, dropped)
	assert.Equal(t, int64(300), h.TotalCount())
	assert.True(t, h.ValuesAreEquivalent(2000, h.ValueAtQuantile(50)))

	// Input that holds no histogram log is an error, never a count of 0.
	empty := filepath.Join(dir, "empty.hlog")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	shardFile := filepath.Join(dir, "shard-0.json")
	require.NoError(t, WriteFile(shardFile, nil, fakeShard(t, Spec{Index: 0, Count: 1}, time.Unix(10, 0), time.Second, time.Second, 1, time.Millisecond)))
	for name, ps := range map[string][]string{
		"no paths":     nil,
		"missing file": {filepath.Join(dir, "none")},
		"empty file":   {empty},
		"shard json":   {shardFile},
		"one bad":      {paths[0], empty},
	} {
		h, _, err := MergeHistogramLogs(ps...)
		assert.Error(t, err, name)
		assert.NotNil(t, h, name)
		if len(ps) > 0 && name != "missing file" {
			assert.ErrorIs(t, err, ErrInvalid, name)
			assert.ErrorContains(t, err, ps[len(ps)-1], name)
		}
	}
}

func TestMergeFilesListsUnreadable(t *testing.T) {
	dir := t.TempDir()
	r := fakeShard(t, Spec{Index: 0, Count: 2}, time.Unix(4000, 0), 3*time.Second, time.Second, 5, time.Millisecond)
	good := filepath.Join(dir, "0.json")
	f, err := os.Create(good)
	require.NoError(t, err)
	require.NoError(t, encode(f, r))
	require.NoError(t, f.Close())
	// A truncated file: named with its decode error, not as "missing".
	var whole bytes.Buffer
	require.NoError(t, encode(&whole, fakeShard(t, Spec{Index: 1, Count: 2}, time.Unix(4000, 0), 3*time.Second, time.Second, 5, time.Millisecond)))
	bad := filepath.Join(dir, "1.json")
	require.NoError(t, os.WriteFile(bad, whole.Bytes()[:whole.Len()/2], 0o600))
	m, err := MergeFiles([]string{good, bad}, nil)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.Equal(t, []int{1}, m.Missing)
	require.Len(t, m.Unreadable, 1)
	assert.Equal(t, bad, m.Unreadable[0].Path)
	assert.Equal(t, -1, m.Unreadable[0].Shard)
	assert.ErrorContains(t, err, bad+" unreadable: shard: invalid result: unexpected EOF")
	assert.NotContains(t, err.Error(), "missing")
	assert.False(t, errors.Is(err, ErrMismatch))
	assert.Equal(t, int64(15), m.Count, "the readable shard is merged")

	m, err = MergeFiles([]string{bad}, nil)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.ErrorContains(t, err, "unexpected EOF")
	assert.NotNil(t, m.Histogram)
	_, err = MergeFiles(nil, nil)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestParseProcStat(t *testing.T) {
	r := parseProcStat("cpu  10 1 5 80 4 0 0 0 7 0\ncpu0 5 0 2 40 2 0 0 0 0 0\n")
	require.True(t, r.ok)
	assert.Equal(t, uint64(100), r.total)
	assert.Equal(t, uint64(16), r.busy)
	assert.False(t, parseProcStat("intr 1 2\n").ok)
	assert.False(t, parseProcStat("cpu 1 x 3 4 5\n").ok)
}

func TestVerdictBusyHost(t *testing.T) {
	busy := 0.97
	c := &CPU{Process: 200 * time.Millisecond, Wall: 2 * time.Second, LimitCores: 2, LimitSource: "cpus", HostBusy: &busy}
	sat, why := verdict(&Result{CPU: c}, defaults(t))
	assert.True(t, sat)
	assert.Contains(t, why, "host's CPUs were 97 % busy")
}

func TestWriteFile(t *testing.T) {
	r := fakeShard(t, Spec{Index: 0, Count: 1}, time.Unix(1000, 0), 2*time.Second, time.Second, 3, time.Millisecond)
	path := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, WriteFile(path, nil, r))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := Decode(f)
	require.NoError(t, err)
	assert.Equal(t, r.Shard, got.Shard)

	var out bytes.Buffer
	require.NoError(t, WriteFile("-", &out, r))
	assert.Contains(t, out.String(), `"shard"`)
	assert.Error(t, WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir"), nil, r))
	assert.ErrorIs(t, WriteFile(path, nil, nil), ErrInvalid)
	assert.ErrorIs(t, WriteFile("-", nil, r), ErrInvalid, "nil stdout")
	assert.ErrorIs(t, WriteFile("", &out, r), ErrInvalid, "empty path")
	assert.ErrorIs(t, encode(nil, r), ErrInvalid, "nil writer")
}
