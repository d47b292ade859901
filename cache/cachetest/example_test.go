package cachetest_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// Start is usable outside tests, for tools that need a local server.
func ExampleStart() {
	s, err := cachetest.Start(context.Background(), &cachetest.Config{TLS: true, User: "bench"})
	if err != nil {
		log.Fatal(err) // errors.Is(err, cachetest.ErrNoServer) when nothing is installed
	}
	defer s.Close()
	fmt.Println(s.Addr, s.CAFile)
}

// In a user's benchmark: go test -bench Cache reports p50-ns, p99-ns, ops/s.
func ExampleBenchmark() {
	_ = func(b *testing.B) {
		cachetest.Benchmark(b, &cache.Endpoint{Addr: "127.0.0.1:6379"},
			&cache.WorkloadConfig{Mode: cache.Pooled, Workers: 4})
	}
}

// Endpoint points cache at the server, credentials and CA included.
func ExampleServer_Endpoint() {
	s, err := cachetest.Start(context.Background(), &cachetest.Config{TLS: true, User: "bench"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	p, err := cache.NewProber(s.Endpoint())
	if err != nil {
		log.Fatal(err)
	}
	r, err := p.Probe(context.Background())
	fmt.Println(r.TLSVersion, err)
}
