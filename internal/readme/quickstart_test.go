package readme_test

// README begin
import (
	"context"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/throughputtest"
)

func TestQuickstart(t *testing.T) {
	ctx, d := context.Background(), time.Second
	tput := throughputtest.NewServer(t, nil) // in-process iperf3-compatible server
	res, err := throughput.Run(ctx, tput.Addr, &throughput.Config{Streams: 2, Duration: d})
	check(t, err)
	t.Logf("%.2f Gbit/s", res.Total().Received.BitsPerSecond/1e9)

	rtt := latencytest.NewServer(t, nil) // in-process sockperf-compatible server
	pp, err := latency.PingPong(ctx, rtt.Addr, &latency.PingPongConfig{Duration: d})
	check(t, err)
	t.Logf("RTT p50 %v, p99 %v over %d round trips", pp.P50, pp.P99, pp.Observations)

	p, err := cache.NewProber(cachetest.NewServer(t, nil).Endpoint()) // a real redis-server
	check(t, err)
	sum, err := p.Run(ctx, &cache.ProbeConfig{Probes: 100})
	check(t, err)
	t.Logf("TCP connect p50 %v, GET p50 %v", sum.Phases[cache.PhaseConnect].P50, sum.Phases[cache.PhaseCommand].P50)
}

func BenchmarkRTT(b *testing.B) { // go test -bench RTT -count 6 > new.txt; benchstat old.txt new.txt
	latencytest.Benchmark(b, latencytest.NewServer(b, nil).Addr, nil)
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// README end
