package glide_test

import (
	"context"
	"fmt"
	"log"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/glide"
	"github.com/netperfkit/netperfkit/cache/median"
)

// The same workload on glide and on the built-in resp engine: the ratio is
// the client library's own overhead on this endpoint.
func ExampleEngine() {
	ep := &cache.Endpoint{Addr: "127.0.0.1:6379"}
	var aggs []*median.Result
	for _, e := range []cache.Engine{glide.Engine(), nil} {
		a, err := median.Run(context.Background(), ep, &median.Config{Workload: &cache.WorkloadConfig{Engine: e}, Runs: 3})
		if err != nil {
			log.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	c := median.Compare("resp", aggs[1], "glide", aggs[0])
	fmt.Printf("glide vs resp: p50 %.2fx, ops/s %.2fx\n", c.P50Ratio, c.OpsPerSecRatio)
}

// glide's own warnings (failed connections, reconnects) go to a file
// instead of being silenced; the setting is process-wide, so a tool makes
// it once, before its first run (a -glide-log flag, for instance).
func ExampleSetLog() {
	if err := glide.SetLog("warn", "glide-logs/glide.log"); err != nil {
		log.Fatal(err)
	}
	_, err := cache.Run(context.Background(), &cache.Endpoint{Addr: "127.0.0.1:6379"},
		&cache.WorkloadConfig{Engine: glide.Engine()})
	if err != nil {
		log.Fatal(err)
	}
}
