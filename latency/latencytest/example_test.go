package latencytest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
)

func ExampleNewServer() {
	t := &testing.T{} // in a real test, the *testing.T of the test
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	defer srv.Close()
	res, err := latency.PingPong(context.Background(), srv.Addr, &latency.PingPongConfig{Count: 100, ReadTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Observations, res.Dropped)
	// Output: 100 0
}

// A path that loses every tenth reply, for a test of what a client makes of
// loss.
func ExampleConfig_impair() {
	t := &testing.T{} // in a real test, the *testing.T of the test
	var n int
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp", Impair: func(uint64) (time.Duration, bool) {
		n++
		return 0, n%10 == 0
	}})
	defer srv.Close()
	res, err := latency.PingPong(context.Background(), srv.Addr, &latency.PingPongConfig{Count: 100, AdaptiveTimeout: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Observations, res.Dropped)
	// Output: 90 10
}

func ExampleBenchmark() {
	// In a _test.go file of your own:
	//
	//	func BenchmarkRTT(b *testing.B) {
	//		srv := latencytest.NewServer(b, nil)
	//		latencytest.Benchmark(b, srv.Addr, nil)
	//	}
	//
	// `go test -bench RTT -count 10 | benchstat -` then compares p50-ns,
	// p99-ns and p999-ns across runs.
}
