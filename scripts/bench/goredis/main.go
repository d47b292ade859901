// Command goredis is the go-redis v9 side of scripts/bench/goredis.sh: a plain
// closed-loop GET load, as a user of that library would write it, to compare
// with examples/cachebench -engine resp against the same redis-server. It
// lives in its own module so that the main module never depends on go-redis.
//
// Usage:
//
//	go run . -addr 127.0.0.1:6379 [-workers 4] [-d 2s] [-fill]
//
// It prints one line: "ops/s p50_us p99_us errors". Keys and values are
// cachebench's defaults: "netperfkit:0" to "netperfkit:9999", 100 bytes;
// -fill SETs them all first so that every GET finds its key.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "goredis:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:6379", "redis `host:port`")
	workers := flag.Int("workers", 4, "goroutines, each with its own pooled connection")
	dur := flag.Duration("d", 2*time.Second, "run `duration`")
	keys := flag.Int("keys", 10000, "distinct keys")
	fill := flag.Bool("fill", false, "SET every key first")
	flag.Parse()
	if *workers < 1 || *keys < 1 || *dur <= 0 {
		return errors.New("-workers, -keys and -d must be positive")
	}
	// One connection per worker, all opened before the clock starts, as
	// cachebench's pool mode has each worker reuse one client.
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *workers, MinIdleConns: *workers})
	defer rdb.Close()
	ctx := context.Background()
	names := make([]string, *keys)
	for i := range names {
		names[i] = "netperfkit:" + strconv.Itoa(i)
	}
	if *fill {
		val := strings.Repeat("x", 100)
		for _, k := range names {
			if err := rdb.Set(ctx, k, val, 0).Err(); err != nil {
				return err
			}
		}
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	lat, errs := load(ctx, rdb, names, *workers, *dur)
	if len(lat) == 0 {
		return fmt.Errorf("no operation completed (%d errors)", errs)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	fmt.Printf("%.0f %.1f %.1f %d\n", float64(len(lat))/dur.Seconds(), pct(0.50), pct(0.99), errs)
	return nil
}

// load runs GETs of random keys on every worker until d has passed and
// returns each completed operation's latency and the number of errors.
func load(ctx context.Context, rdb *redis.Client, names []string, workers int, d time.Duration) ([]time.Duration, int) {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	end := time.Now().Add(d)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, uint64(w)))
			lat := make([]time.Duration, 0, 1<<16)
			bad := 0
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				err := rdb.Get(ctx, names[rng.IntN(len(names))]).Err()
				if err != nil && !errors.Is(err, redis.Nil) {
					bad++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			errs += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, errs
}
