package shard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/netperfkit/netperfkit/latency/shard"
)

// Two shards measured the same two seconds; a merge adds their histograms
// over the intervals both measured whole.
func Example() {
	start := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	var files []*bytes.Buffer
	for i := range 2 {
		sp := shard.Spec{Index: i, Count: 2}
		rec, _ := shard.NewRecorder(start, 2*time.Second, nil)
		for k := range 100 {
			rec.Record(start.Add(time.Duration(k)*20*time.Millisecond), time.Duration(i+1)*time.Millisecond)
		}
		var buf bytes.Buffer
		_ = shard.Encode(&buf, &shard.Result{Tool: "example", Shard: sp, Start: start, End: start.Add(2 * time.Second),
			Interval: rec.Interval(), Intervals: rec.Intervals(start.Add(2 * time.Second))})
		files = append(files, &buf)
	}
	var rs []*shard.Result
	for _, f := range files {
		r, err := shard.Decode(f)
		if err != nil {
			fmt.Println(err)
			return
		}
		rs = append(rs, r)
	}
	m, err := shard.Merge(rs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d operations in %d intervals, %.0f ops/s, p50 %v, p99 %v\n",
		m.Count, m.Intervals, m.OpsPerSec, m.Latency.P50.Round(time.Microsecond), m.Latency.P99.Round(time.Microsecond))
	// Output: 200 operations in 2 intervals, 100 ops/s, p50 1ms, p99 2.001ms
}

// A shard waits for the common start time, which must still be ahead.
func ExampleWaitUntil() {
	_, _, err := shard.WaitUntil(context.Background(), time.Now().Add(-time.Minute))
	fmt.Println(errors.Is(err, shard.ErrPastStart))
	// Output: true
}

// -shard 1/4 takes the second quarter of a key space.
func ExampleSpec_Part() {
	sp, _ := shard.ParseSpec("1/4")
	fmt.Println(sp.Part(10000))
	// Output: 2500 5000
}

// A user's program merges the shards' files as `cachebench merge` does.
func ExampleMergeFiles() {
	files, _ := filepath.Glob("/results/run1/shard-*.json")
	// README begin
	m, err := shard.MergeFiles(files, nil) // every shard's -out file
	if err != nil {
		log.Print(err) // names missing or failed shards; m holds the others
	}
	fmt.Printf("%.0f ops/s over %v, p99 %v\n", m.OpsPerSec, m.Window, m.Latency.P99)
	for _, r := range m.Rows {
		if r.Saturated {
			fmt.Printf("shard %d: %s\n", r.Shard, r.Reason)
		}
	}
	// README end
}

// A shard measures its own CPU use beside its load, for the merge's verdict.
func ExampleStartCPU() {
	cpu := shard.StartCPU()
	// ... the shard's load runs here ...
	if c := cpu.Stop(); c != nil {
		fmt.Printf("%.2f of %.2f cores (%s)\n", c.UsedCores(), c.LimitCores, c.LimitSource)
	}
}

// -start-at takes RFC 3339.
func ExampleParseStartAt() {
	at, err := shard.ParseStartAt("2026-12-02T15:00:00Z")
	fmt.Println(at.Unix(), err)
	// Output: 1796223600 <nil>
}
