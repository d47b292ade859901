package shard

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzDecode feeds Decode arbitrary result files: it must return an error
// or a Result that encodes and decodes to the same counts, never panic.
func FuzzDecode(f *testing.F) {
	r := &Result{Tool: "seed", Shard: Spec{Index: 0, Count: 2}, Start: time.Unix(10, 5), End: time.Unix(12, 0), Interval: time.Second}
	rec, _ := NewRecorder(r.Start, 2*time.Second, nil)
	rec.Record(r.Start.Add(time.Second), time.Millisecond)
	r.Intervals = rec.Intervals(r.End)
	var buf bytes.Buffer
	if err := Encode(&buf, r); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"netperfkit-shard/1","shard":0,"shards":1}`))
	f.Add([]byte(strings.Replace(buf.String(), `"count": 1`, `"count": 2`, 1)))
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
		if err := Encode(&out, got); err != nil {
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
		_, _ = Merge([]*Result{got}, nil)
	})
}
