package median_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// Pool vs connect-per-operation, each the median of 3 runs, as ratios.
func ExampleRun() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	cfg := &median.Config{Runs: 3, Workload: &cache.WorkloadConfig{Duration: 5 * time.Second},
		OnRun: func(r cache.RunResult) { fmt.Println(r.Mode, r.OpsPerSec) }}
	pool, err := median.Run(context.Background(), ep, cfg)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Workload.Mode = cache.ConnectPerOp
	conn, err := median.Run(context.Background(), ep, cfg)
	if err != nil {
		log.Fatal(err)
	}
	c := median.Compare("pool", pool, "connect", conn)
	fmt.Printf("connect-per-op: p50 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.OpsPerSecRatio)
}

func ExampleSummarize() {
	run := func(p50, p99, ops float64, attempts, errs int64) *cache.RunResult {
		return &cache.RunResult{Engine: "resp", Mode: cache.Pooled, OpsPerSec: ops, Attempts: attempts, Errors: errs,
			Latency: latency.Summary{P50: time.Duration(p50 * 1e3), P99: time.Duration(p99 * 1e3)}}
	}
	a := median.Summarize([]*cache.RunResult{
		run(151, 273, 24506, 490120, 0),
		run(148, 290, 24800, 496000, 0),
		run(160, 260, 23100, 462000, 2),
	})
	fmt.Printf("p50 %v (%v-%v), ops/s %.0f, attempts %d, errors %d\n",
		a.P50.Median, a.P50.Min, a.P50.Max, a.OpsPerSec.Median, a.Attempts, a.Errors)
	// Output: p50 151µs (148µs-160µs), ops/s 24506, attempts 1448120, errors 2
}

func ExampleCompare() {
	us := func(n int) latency.Range[time.Duration] {
		return latency.Range[time.Duration]{Median: time.Duration(n) * time.Microsecond}
	}
	node := &median.Result{P50: us(151), P99: us(273), OpsPerSec: latency.Range[float64]{Median: 24506}}
	serverless := &median.Result{P50: us(476), P99: us(719), OpsPerSec: latency.Range[float64]{Median: 8310}}
	c := median.Compare("node", node, "serverless", serverless)
	fmt.Printf("p50 %.2fx, p99 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.P99Ratio, c.OpsPerSecRatio)
	// Output: p50 3.15x, p99 2.63x, ops/s 0.34x
}

// The README's cache snippet, against a local redis-server or valkey-server
// that cachetest starts on a free loopback port (TestReadmeExample runs it;
// internal/readme keeps the two texts the same).
func Example_readme() {
	ctx := context.Background()
	srv, err := cachetest.Start(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ep := srv.Endpoint() // a real cache: &cache.Endpoint{Addr: "my-cache.xxxxxx.use1.cache.amazonaws.com:6379", TLS: true, Cluster: true}

	// README begin
	p, err := cache.NewProber(ep)
	if err != nil {
		log.Fatal(err)
	}
	sum, err := p.Run(ctx, &cache.ProbeConfig{Probes: 200})
	if err != nil {
		log.Fatal(err)
	}
	for _, ph := range []cache.Phase{cache.PhaseDNS, cache.PhaseConnect, cache.PhaseTLS, cache.PhaseClusterSlots, cache.PhaseCommand} {
		fmt.Printf("%s %v, ", ph, sum.Phases[ph].P50)
	}
	fmt.Printf("total %v\n", sum.Total.P50)

	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		res, err := median.Run(ctx, ep, &median.Config{Runs: 3, Workload: &cache.WorkloadConfig{
			Mode: mode, Workers: 4, Duration: time.Second, // Engine nil: the pure-Go resp engine
		}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: p50 %v, p99 %v, %.0f ops/s (median of 3)\n", mode, res.P50.Median, res.P99.Median, res.OpsPerSec.Median)
	}
	// README end
}
