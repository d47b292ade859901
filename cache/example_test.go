package cache_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/slo"
)

// Probe an endpoint 200 times and print the phase medians.
func ExampleNewProber() {
	ep := &cache.Endpoint{Addr: "my-cache.abc123.use1.cache.amazonaws.com:6379", TLS: true, Cluster: true}
	p, err := cache.NewProber(context.Background(), ep)
	if err != nil {
		log.Fatal(err)
	}
	sum, err := p.Run(context.Background(), &cache.ProbeConfig{Probes: 200})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("TLS %.0f us, CLUSTER SLOTS %.0f us, total %.0f us, %d errors\n",
		float64(sum.Phases[cache.PhaseTLS].P50)/1e3, float64(sum.Phases[cache.PhaseClusterSlots].P50)/1e3, float64(sum.Total.P50)/1e3, sum.Probes-sum.Succeeded)
}

// One probe, with its error classified by phase.
func ExampleProber_Probe() {
	p, err := cache.NewProber(context.Background(), &cache.Endpoint{Addr: "127.0.0.1:6379", User: "bench", Password: "pw"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := p.Probe(context.Background())
	switch {
	case errors.Is(err, cache.ErrWrongPass):
		fmt.Println("wrong user name or password")
	case errors.Is(err, cache.ErrConnectRefused):
		fmt.Println("nothing listens there")
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println(r.Phases[cache.PhaseConnect], r.Phases[cache.PhaseAuth], r.Phases[cache.PhaseCommand], r.Total)
	}
}

// Hooks see every phase with its start time and duration.
func ExampleWithClientTrace() {
	trace := &cache.ClientTrace{Done: func(i cache.PhaseInfo) {
		switch {
		case i.TLS != nil:
			fmt.Println("TLS took", i.Duration, "version", tls.VersionName(i.TLS.Version))
		case i.Phase == cache.PhaseAuth:
			fmt.Println("AUTH took", i.Duration, "err", i.Err)
		}
	}}
	ctx := cache.WithClientTrace(context.Background(), trace)
	p, err := cache.NewProber(ctx, &cache.Endpoint{Addr: "127.0.0.1:6380", TLS: true, InsecureSkipVerify: true})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = p.Probe(ctx)
}

// ElastiCache IAM: the token is presigned with the standard AWS credential
// chain and refreshed before it expires; it is never printed.
func ExampleNewIAMTokenSource() {
	ts, err := cache.NewIAMTokenSource(context.Background(), "my-iam-user", &cache.IAMConfig{
		CacheName: "my-serverless-cache", Region: "us-east-1", Serverless: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := ts.Token(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok) // prints [redacted]
}

// The field study's workload: 4 workers, 20 s, 1:1 GET/SET, on the built-in
// resp engine (package cache/glide provides the glide engine).
func ExampleRun() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	r, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Mode: cache.ModePool})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: p50 %.0f us, p99 %.0f us, %.0f ops/s, %d errors\n",
		r.Engine, float64(r.Latency.P50)/1e3, float64(r.Latency.P99)/1e3, r.OpsPerSec, r.Errors)
}

// Pool vs connect-per-operation, each the median of 3 runs, as ratios.
func ExampleRunRepeated() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	cfg := &cache.WorkloadConfig{Duration: 5 * time.Second, Runs: 3,
		OnRun: func(r *cache.RunResult) { fmt.Println(r.Mode, r.OpsPerSec) }}
	pool, err := cache.RunRepeated(context.Background(), ep, cfg)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Mode = cache.ModeConnect
	conn, err := cache.RunRepeated(context.Background(), ep, cfg)
	if err != nil {
		log.Fatal(err)
	}
	c := cache.Compare("pool", pool, "connect", conn)
	fmt.Printf("connect-per-op: p50 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.OpsPerSecRatio)
}

func ExampleSummarize() {
	run := func(p50, p99, ops float64, attempts, errs int64) *cache.RunResult {
		return &cache.RunResult{Engine: "resp", Mode: cache.ModePool, OpsPerSec: ops, Attempts: attempts, Errors: errs,
			Latency: latency.Summary{P50: time.Duration(p50 * 1e3), P99: time.Duration(p99 * 1e3)}}
	}
	a := cache.Summarize([]*cache.RunResult{
		run(151, 273, 24506, 490120, 0),
		run(148, 290, 24800, 496000, 0),
		run(160, 260, 23100, 462000, 2),
	})
	fmt.Printf("p50 %.0f us (%.0f-%.0f), ops/s %.0f, attempts %d, errors %d\n",
		a.P50Us.Median, a.P50Us.Min, a.P50Us.Max, a.OpsPerSec.Median, a.Attempts, a.Errors)
	// Output: p50 151 us (148-160), ops/s 24506, attempts 1448120, errors 2
}

func ExampleCompare() {
	node := &cache.Aggregate{P50Us: latency.Range{Median: 151}, P99Us: latency.Range{Median: 273}, OpsPerSec: latency.Range{Median: 24506}}
	serverless := &cache.Aggregate{P50Us: latency.Range{Median: 476}, P99Us: latency.Range{Median: 719}, OpsPerSec: latency.Range{Median: 8310}}
	c := cache.Compare("node", node, "serverless", serverless)
	fmt.Printf("p50 %.2fx, p99 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.P99Ratio, c.OpsPerSecRatio)
	// Output: p50 3.15x, p99 2.63x, ops/s 0.34x
}

func ExampleSecret() {
	ep := cache.Endpoint{Addr: "10.0.0.5:6379", User: "bench", Password: "hunter2"}
	fmt.Printf("%v\n%+v\n", ep.Password, ep.Password)
	fmt.Println(ep.String())
	// Output:
	// [redacted]
	// [redacted]
	// 10.0.0.5:6379 cluster=false tls=false auth=password:bench
}

func ExampleError() {
	err := fmt.Errorf("probe 3: %w", &cache.Error{Phase: cache.PhaseTLS, Kind: cache.ErrTLSVerify})
	var ce *cache.Error
	fmt.Println(errors.As(err, &ce) && ce.Kind == cache.ErrTLSVerify, errors.Is(err, cache.ErrTLSVerify), errors.Is(err, cache.ErrTLSHandshake))
	// Output: true true false
}

// An open-loop run at 5,000 operations per second: latencies run from each
// operation's intended start, and the schedule says whether the load was
// offered in full.
func ExampleRun_rate() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	r, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Rate: 5000, Duration: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	s := r.Schedule
	fmt.Printf("%.0f ops/s (achieved %.0f/s, %d late, %d unstarted): response p99 %.0f us, service p99 %.0f us\n",
		r.OpsPerSec, s.AchievedRate, s.Late, s.Unstarted, float64(s.Response.P99)/1e3, float64(s.Service.P99)/1e3)
}

// The highest rate whose p99 stays within 1 ms.
func ExampleSearchRate() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	res, err := cache.SearchRate(context.Background(), ep, nil,
		&slo.Config{SLO: slo.SLO{Percentile: 99, Max: time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.0f ops/s meets %s; broke at %.0f ops/s after %d steps\n", res.Rate, res.SLO, res.BrokeAt, len(res.Steps))
}

// Responsiveness under a 16-worker pooled load, RPM-style.
func ExampleResponsiveness() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	res, err := cache.Responsiveness(context.Background(), ep, &cache.ResponsivenessConfig{
		Load: &cache.WorkloadConfig{Workers: 16, Duration: 10 * time.Second}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("RPM %.0f: new connections %.0f us, loaded connections %.0f us (trimmed means), load %.0f ops/s\n",
		res.RPM, float64(res.NewConnection.TrimmedMean)/1e3, float64(res.Loaded.TrimmedMean)/1e3, res.Load.OpsPerSec)
}
