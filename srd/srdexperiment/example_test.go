package srdexperiment_test

import (
	"context"
	"encoding/json"
	"log"
	"os"

	"github.com/netperfkit/netperfkit/srd/srdexperiment"
)

// The field study's experiment against two hosts running iperf3 -s and
// sockperf server, snapshotting eth0's ENA counters around each phase.
func ExampleRun() {
	res, err := srdexperiment.Run(context.Background(), []srdexperiment.Target{
		{Name: "same AZ", ThroughputAddr: "10.0.1.20:5201", PingPongAddr: "10.0.1.20:11111"},
		{Name: "cross AZ", ThroughputAddr: "10.0.2.30:5201", PingPongAddr: "10.0.2.30:11111"},
	}, &srdexperiment.Config{Interface: "eth0"})
	if err != nil {
		log.Fatal(err)
	}
	_ = res.WriteTable(os.Stdout)
	_ = json.NewEncoder(os.Stdout).Encode(res)
}
