package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// Probe a local redis-server's connection set-up 20 times, then run a
// short pooled GET/SET workload on it. (cachetest starts the server; it
// needs redis-server or valkey-server on PATH.)
func Example() {
	ctx := context.Background()
	srv, err := cachetest.Start(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ep := srv.Endpoint()

	p, err := cache.NewProber(ep)
	if err != nil {
		log.Fatal(err)
	}
	sum, err := p.Run(ctx, &cache.ProbeConfig{Probes: 20})
	if err != nil {
		log.Fatal(err)
	}
	connect := sum.Phases[cache.PhaseConnect]
	fmt.Printf("probes: %d of %d succeeded; connect timed %d times\n", sum.Succeeded, sum.Probes, connect.Observations)

	r, err := cache.Run(ctx, ep, &cache.WorkloadConfig{Mode: cache.Pooled, Workers: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s engine, %s mode: ran %t, errors %d\n", r.Engine, r.Mode, r.Attempts > 0 && r.OpsPerSec > 0, r.Errors)
	// Output:
	// probes: 20 of 20 succeeded; connect timed 20 times
	// resp engine, pool mode: ran true, errors 0
}

// Probe an endpoint 200 times and print the phase medians.
func ExampleNewProber() {
	ep := &cache.Endpoint{Addr: "my-cache.abc123.use1.cache.amazonaws.com:6379", TLS: true, Cluster: true}
	p, err := cache.NewProber(ep)
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
	p, err := cache.NewProber(&cache.Endpoint{Addr: "127.0.0.1:6379", User: "bench", Password: "pw"})
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
	done := func(i cache.PhaseInfo) {
		switch i.Phase {
		case cache.PhaseTLS:
			fmt.Println("TLS took", i.Duration, "err", i.Err)
		case cache.PhaseAuth:
			fmt.Println("AUTH took", i.Duration, "err", i.Err)
		}
	}
	ctx := cache.WithClientTrace(context.Background(), nil, done)
	p, err := cache.NewProber(&cache.Endpoint{Addr: "127.0.0.1:6380", TLS: true, InsecureSkipVerify: true})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = p.Probe(ctx)
}

// The field study's workload: 4 workers, 20 s, 1:1 GET/SET, on the built-in
// resp engine (package cache/glide provides the glide engine).
func ExampleRun() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	r, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Mode: cache.Pooled})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: p50 %.0f us, p99 %.0f us, %.0f ops/s, %d errors\n",
		r.Engine, float64(r.Latency.P50)/1e3, float64(r.Latency.P99)/1e3, r.OpsPerSec, r.Errors)
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
