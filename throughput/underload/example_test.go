package underload_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/underload"
)

// Measure the RTT under load: a latency probe to a sockperf-compatible echo
// server (`sockperf server` or latency.Server) runs while 8 TCP streams fill
// the path.
func ExampleRun() {
	res, err := underload.Run(context.Background(), "10.0.0.2:5201", &underload.Config{
		Flows:    throughput.Config{Streams: 8, Duration: 20 * time.Second},
		EchoAddr: "10.0.0.2:11111",
	})
	if err != nil {
		log.Fatal(err)
	}
	if res.Latency == nil { // the probe failed; the flows' notes say why
		log.Fatal(res.Flows.Notes)
	}
	fmt.Printf("%.1f Gbit/s with RTT p50 %.1f us, p99 %.1f us under load\n",
		res.Flows.Total().Received.BitsPerSecond/1e9, float64(res.Latency.P50)/1e3, float64(res.Latency.P99)/1e3)
}
