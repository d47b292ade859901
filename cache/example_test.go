package cache_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
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
	m := sum.Medians()
	fmt.Printf("TLS %.0f us, CLUSTER SLOTS %.0f us, total %.0f us, %d errors\n", m.TLSUs, m.ClusterSlotsUs, m.TotalUs, sum.Errors)
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
		fmt.Println(r.Connect, r.Auth, r.Command, r.Total)
	}
}

// Hooks see every phase with its start time and duration.
func ExampleWithClientTrace() {
	trace := &cache.ClientTrace{
		TLSHandshakeDone: func(i cache.TLSHandshakeDone) {
			fmt.Println("TLS took", i.Duration, "version", i.State.Version)
		},
		AuthDone: func(i cache.PhaseDone) { fmt.Println("AUTH took", i.Duration, "err", i.Err) },
	}
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

// The field study's workload: 4 workers, 20 s, 1:1 GET/SET, on both engines.
func ExampleRun() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	for _, engine := range []cache.Engine{cache.EngineGlide, cache.EngineResp} {
		r, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Engine: engine, Mode: cache.ModePool})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: p50 %.0f us, p99 %.0f us, %.0f ops/s, %d errors\n", engine, r.P50Us, r.P99Us, r.OpsPerSec, r.Errors)
	}
}

// Pool vs connect-per-operation, each the median of 3 runs, as ratios.
func ExampleRunRepeated() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	cfg := &cache.WorkloadConfig{Engine: cache.EngineResp, Duration: 5 * time.Second}
	pool, err := cache.RunRepeated(context.Background(), ep, cfg, 3, nil)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Mode = cache.ModeConnect
	conn, err := cache.RunRepeated(context.Background(), ep, cfg, 3, nil)
	if err != nil {
		log.Fatal(err)
	}
	c := cache.Compare("pool", pool, "connect", conn)
	fmt.Printf("connect-per-op: p50 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.OpsPerSecRatio)
}

func ExampleSummarize() {
	a := cache.Summarize([]*cache.RunResult{
		{Engine: cache.EngineResp, Mode: cache.ModePool, P50Us: 151, P99Us: 273, OpsPerSec: 24506, Attempts: 490120},
		{Engine: cache.EngineResp, Mode: cache.ModePool, P50Us: 148, P99Us: 290, OpsPerSec: 24800, Attempts: 496000},
		{Engine: cache.EngineResp, Mode: cache.ModePool, P50Us: 160, P99Us: 260, OpsPerSec: 23100, Attempts: 462000, Errors: 2},
	})
	fmt.Printf("p50 %.0f us (%.0f-%.0f), ops/s %.0f, attempts %d, errors %d\n",
		a.P50Us, a.P50UsRange[0], a.P50UsRange[1], a.OpsPerSec, a.Attempts, a.Errors)
	// Output: p50 151 us (148-160), ops/s 24506, attempts 1448120, errors 2
}

func ExampleCompare() {
	node := &cache.Aggregate{P50Us: 151, P99Us: 273, OpsPerSec: 24506}
	serverless := &cache.Aggregate{P50Us: 476, P99Us: 719, OpsPerSec: 8310}
	c := cache.Compare("node", node, "serverless", serverless)
	fmt.Printf("p50 %.2fx, p99 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.P99Ratio, c.OpsPerSecRatio)
	// Output: p50 3.15x, p99 2.63x, ops/s 0.34x
}

func ExampleParseRatio() {
	get, set, err := cache.ParseRatio("9:1")
	fmt.Println(get, set, err)
	// Output: 9 1 <nil>
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

func ExampleNewEndpointFlags() {
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	ef := cache.NewEndpointFlags(fs)
	_ = fs.Parse([]string{"-addr", "cache.example.com:6379", "-cluster", "-user", "app", "-iam-cache", "My-Cache", "-iam-region", "eu-west-1", "-serverless"})
	ep, err := ef.Endpoint()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(ep, ep.IAM.CacheName, ep.IAM.Serverless)
	// Output: cache.example.com:6379 cluster=true tls=true auth=iam:app My-Cache true
}

func ExampleKindOf() {
	err := fmt.Errorf("probe 3: %w", &cache.Error{Phase: cache.PhaseTLS, Kind: cache.ErrTLSVerify})
	fmt.Println(string(cache.KindOf(err)), errors.Is(err, cache.ErrTLSVerify), errors.Is(err, cache.ErrTLSHandshake))
	// Output: tls_verify true false
}

// In a user's benchmark: go test -bench Cache reports p50-ns, p99-ns, ops/s.
func ExampleBenchmark() {
	_ = func(b *testing.B) {
		cache.Benchmark(b, &cache.Endpoint{Addr: "127.0.0.1:6379"},
			&cache.WorkloadConfig{Engine: cache.EngineResp, Mode: cache.ModePool, Workers: 4})
	}
}
