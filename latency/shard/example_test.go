package shard_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/shard"
)

// A shard in a few lines: Run waits for the common start, hands the load a
// record func, and returns the shard's Result, ready for WriteFile or
// Merge. This load times a local function; a real one calls cache.Run or
// latency.PingPong and records from their per-operation hooks.
func ExampleRun() {
	cfg := &shard.Config{Shard: shard.Spec{Index: 0, Count: 1}, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond}
	r, err := shard.Run(context.Background(), cfg, func(ctx context.Context, record func(time.Time, time.Duration, error)) error {
		for end := time.Now().Add(cfg.Duration); time.Now().Before(end); {
			t0 := time.Now()
			time.Sleep(time.Millisecond) // the operation
			record(time.Now(), time.Since(t0), nil)
		}
		return nil
	})
	r.Tool = "example"
	fmt.Println(r.Shard, len(r.Intervals) >= 4, err)
	// Output: 0/1 true <nil>
}

// Two shards of a cache load, started together on a whole second, merged
// in memory: the whole program (shards on several hosts write their Result
// with WriteFile instead, and `cachebench merge` or MergeFiles reads them).
func ExampleRun_cache() {
	// README begin
	ep, at := &cache.Endpoint{Addr: "127.0.0.1:6379"}, time.Now().Truncate(time.Second).Add(2*time.Second)
	rs, wg := make([]*shard.Result, 2), sync.WaitGroup{}
	for i := range rs {
		wg.Go(func() {
			cfg := &shard.Config{Shard: shard.Spec{Index: i, Count: 2}, StartAt: at, Duration: 5 * time.Second}
			rs[i], _ = shard.Run(context.Background(), cfg, func(ctx context.Context, record func(time.Time, time.Duration, error)) error {
				_, err := cache.Run(ctx, ep, &cache.WorkloadConfig{Duration: cfg.Duration, KeyPrefix: fmt.Sprint(i, ":"),
					OnOperation: func(start, end time.Time, err error) { record(end, end.Sub(start), err) }})
				return err
			})
		})
	}
	wg.Wait()
	m, err := shard.Merge(rs, nil)
	fmt.Printf("%d requests, %.0f/s over %v, p99 %v, start skew %v, err %v\n", m.Count, m.OpsPerSec, m.Window, m.Latency.P99, m.StartSkew, err)
	// README end
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

// A shard whose start has passed is refused, so that it never runs on its
// own out of step with the others.
func ExampleRun_pastStart() {
	cfg := &shard.Config{StartAt: time.Now().Add(-time.Minute), Duration: time.Second}
	_, err := shard.Run(context.Background(), cfg, func(context.Context, func(time.Time, time.Duration, error)) error { return nil })
	fmt.Println(errors.Is(err, shard.ErrPastStart))
	// Output: true
}

// ExampleRun_pingPong runs one shard of a ping-pong: each round trip is
// recorded in the interval its reply came back in, through PingPong's
// per-message hook.
func ExampleRun_pingPong() {
	cfg := &shard.Config{Shard: shard.Spec{Index: 0, Count: 2}, StartAt: time.Now().Truncate(time.Second).Add(2 * time.Second), Duration: 5 * time.Second}
	r, err := shard.Run(context.Background(), cfg, func(ctx context.Context, record func(time.Time, time.Duration, error)) error {
		_, err := latency.PingPong(ctx, "127.0.0.1:11111", &latency.PingPongConfig{Duration: cfg.Duration,
			OnMessage: func(sent time.Time, rtt time.Duration, err error) { record(sent.Add(rtt), rtt, err) }})
		return err
	})
	if err != nil {
		log.Print(err)
	}
	r.Tool = "pingpong"
	_ = shard.WriteFile("-", os.Stdout, r)
}
