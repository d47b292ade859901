package responsiveness_test

import (
	"context"
	"log"
	"time"

	"github.com/netperfkit/netperfkit/latency/responsiveness"
)

func ExampleRun() {
	// Ten seconds of probes to a `sockperf server --tcp` on the far host,
	// while something else loads the path.
	res, err := responsiveness.Run(context.Background(), "10.0.0.2:11111", &responsiveness.Config{Duration: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("RPM %.0f: new connections %v (trimmed mean), established %v",
		res.RPM, res.NewConnection.TrimmedMean, res.Established.TrimmedMean)
}
