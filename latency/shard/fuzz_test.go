package shard

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// seedResult encodes a small valid result of shard i of 2.
func seedResult(f *testing.F, i int, start time.Time) []byte {
	f.Helper()
	r := &Result{Tool: "seed", Shard: Spec{Index: i, Count: 2}, Start: start, End: start.Add(2 * time.Second), Interval: time.Second}
	rec, err := newRecorder(r.Start, 2*time.Second, time.Second)
	if err != nil {
		f.Fatal(err)
	}
	rec.record(r.Start.Add(time.Second), time.Millisecond, nil)
	rec.record(r.Start.Add(1500*time.Millisecond), 2*time.Millisecond, nil)
	r.Intervals = rec.intervals(r.End)
	var buf bytes.Buffer
	if err := encode(&buf, r); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzDecode feeds Decode arbitrary result files: it must return an error
// or a Result that encodes and decodes to the same counts, never panic.
func FuzzDecode(f *testing.F) {
	good := seedResult(f, 0, time.Unix(10, 5))
	f.Add(good)
	f.Add([]byte(`{"format":"netperfkit-shard/1","shard":0,"shards":1}`))
	f.Add([]byte(strings.Replace(string(good), `"count": 1`, `"count": 2`, 1)))
	f.Add(append(append([]byte{}, good...), good...))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(bytes.NewReader(data))
		if got == nil {
			t.Fatal("nil result")
		}
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := encode(&out, got); err != nil {
			t.Fatalf("re-encoding a decoded result: %v", err)
		}
		again, err := Decode(&out)
		if err != nil {
			t.Fatalf("decoding a re-encoded result: %v", err)
		}
		if len(again.Intervals) != len(got.Intervals) {
			t.Fatalf("%d intervals, then %d", len(got.Intervals), len(again.Intervals))
		}
		for i := range got.Intervals {
			if again.Intervals[i].Count != got.Intervals[i].Count {
				t.Fatalf("interval %d: count %d, then %d", i, got.Intervals[i].Count, again.Intervals[i].Count)
			}
		}
	})
}

// FuzzMerge merges two decoded result files: whatever Decode accepts,
// Merge either refuses with an error or returns a merge whose counts add
// up (the merged histogram holds the merged count, the rows sum to it, and
// no more than the shards measured), never a panic or a nil result.
func FuzzMerge(f *testing.F) {
	a, b := seedResult(f, 0, time.Unix(10, 5)), seedResult(f, 1, time.Unix(10, 40_000))
	f.Add(a, b)
	f.Add(a, a)
	f.Add(a, seedResult(f, 1, time.Unix(20, 0)))
	f.Add(a, []byte(strings.Replace(string(b), `"interval_seconds": 1`, `"interval_seconds": 0.5`, 1)))
	f.Add(a, []byte(strings.Replace(string(b), `"shards": 2`, `"shards": 3`, 1)))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var rs []*Result
		var measured int64
		for _, data := range [][]byte{x, y} {
			r, err := Decode(bytes.NewReader(data))
			if err != nil {
				return
			}
			for _, iv := range r.Intervals {
				measured += iv.Count
			}
			rs = append(rs, r)
		}
		m, err := Merge(rs, nil)
		if m == nil || m.Histogram == nil {
			t.Fatal("nil merge or histogram")
		}
		if err != nil && m.Intervals == 0 {
			return
		}
		var rows int64
		for _, r := range m.Rows {
			rows += r.Count
		}
		if m.Count != rows || m.Count != m.Histogram.TotalCount() || m.Count > measured {
			t.Fatalf("merged %d, rows %d, histogram %d, measured %d", m.Count, rows, m.Histogram.TotalCount(), measured)
		}
		if m.Window != time.Duration(m.Intervals)*rs[0].Interval {
			t.Fatalf("window %v for %d intervals of %v", m.Window, m.Intervals, rs[0].Interval)
		}
	})
}
