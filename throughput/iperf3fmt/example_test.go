package iperf3fmt_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// Format results as iperf3's text report.
func ExampleText() {
	r := &throughput.Result{Streams: []throughput.StreamResult{{ID: 1, Totals: throughput.Totals{
		Duration: 10 * time.Second,
		Sent:     throughput.Counts{Bytes: 10 << 30, BitsPerSecond: 8.59e9, Retransmits: 3},
		Received: throughput.Counts{Bytes: 10 << 30, BitsPerSecond: 8.59e9},
	}}}}
	fmt.Print(iperf3fmt.Text(r))
	// Output:
	// - - - - - - - - - - - - - - - - - - - - - - - - -
	// [ ID] Interval           Transfer     Bitrate         Retr
	// [  4]   0.00-10.00  sec  10.0 GBytes  8.59 Gbits/sec    3            sender
	// [  4]   0.00-10.00  sec  10.0 GBytes  8.59 Gbits/sec                  receiver
}

// A loopback test against an in-process server, printed as iperf3 -J does.
func ExampleJSON() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := throughput.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	res, err := throughput.Run(ctx, ln.Addr().String(), &throughput.Config{Bytes: 1 << 20})
	cancel()
	<-done
	if err != nil {
		log.Fatal(err)
	}
	doc, err := iperf3fmt.JSON(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(doc) > 0, res.Total().Received.Bytes > 0)
	// Output: true true
}

// Print iperf3's live report from a run's events.
func ExampleTextReport() {
	cfg := &throughput.Config{Duration: 10 * time.Second}
	rep := iperf3fmt.NewTextReport(os.Stdout, cfg, iperf3fmt.Options{Format: 'm'})
	cfg.OnEvent = func(e throughput.Event) {
		switch e.Kind {
		case throughput.EventStart:
			for _, s := range e.Result.Streams {
				rep.Connected(s)
			}
		case throughput.EventInterval:
			rep.Interval(*e.Interval)
		case throughput.EventEnd:
			rep.Summary(e.Result)
		}
	}
	// As Run would call it:
	cfg.OnEvent(throughput.Event{Kind: throughput.EventInterval, Interval: &throughput.Interval{End: time.Second,
		Streams: []throughput.StreamInterval{{ID: 1, Sender: true,
			Counts: throughput.Counts{Bytes: 1 << 30, BitsPerSecond: 8.59e9, Retransmits: 2},
			TCP:    &throughput.TCPInfo{SndCwndBytes: 3 << 20}}}}})
	// Output:
	// [ ID] Interval           Transfer     Bitrate         Retr  Cwnd
	// [  4]   0.00-1.00   sec  1.00 GBytes  8590 Mbits/sec    2   3.00 MBytes
}
