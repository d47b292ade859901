package latencytest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
)

func ExampleNewServer() {
	t := &testing.T{} // in a real test, the *testing.T of the test
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	defer srv.Close()
	res, err := latency.PingPong(context.Background(), srv.UDPAddr, &latency.PingPongConfig{Count: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Observations, res.Dropped)
	// Output: 100 0
}

func ExampleBenchmark() {
	// In a _test.go file of your own:
	//
	//	func BenchmarkRTT(b *testing.B) {
	//		srv := latencytest.NewServer(b, nil)
	//		latencytest.Benchmark(b, srv.UDPAddr, nil)
	//	}
	//
	// `go test -bench RTT -count 10 | benchstat -` then compares p50-ns,
	// p99-ns and p999-ns across runs.
}
