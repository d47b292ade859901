package throughput_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
)

// Run a 10-second, 4-stream TCP test against a stock `iperf3 -s` and print
// the received rate with the sender's retransmits.
func ExampleRun() {
	res, err := throughput.Run(context.Background(), "iperf.example.net:5201", &throughput.Config{
		Streams:  4,
		Duration: 10 * time.Second,
		OnInterval: func(iv throughput.Interval) {
			fmt.Printf("%v-%v: %.2f Gbit/s\n", iv.Start, iv.End, iv.Upload.BitsPerSecond/1e9)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.2f Gbit/s, %d retransmits\n", res.Upload.Received.BitsPerSecond/1e9, res.Upload.Sent.Retransmits)
}

// A UDP test at a 5 Gbit/s target says plainly when the sender could not
// reach it (the generator, not the network, was the bottleneck).
func ExampleRun_udp() {
	res, err := throughput.Run(context.Background(), "10.0.0.2", &throughput.Config{
		UDP: true, Bitrate: 5e9, BlockLen: 1400, Duration: 30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	u := res.Upload
	fmt.Printf("received %.0f bit/s, loss %.2f%%, jitter %v, sender limited: %v\n",
		u.Received.BitsPerSecond, u.Received.LostPercent, u.Received.Jitter, u.SenderLimited)
}

// Serve stock iperf3 clients (several at once) until the context ends,
// printing each result and each refused or failed session.
func ExampleServer_ListenAndServe() {
	srv, err := throughput.NewServer(&throughput.ServerConfig{
		MaxTests:    8,
		MaxDuration: time.Minute,
		OnListen:    func(a net.Addr) { log.Printf("listening on %v", a) },
		OnResult: func(r *throughput.Result) {
			fmt.Print(throughput.IperfText(r))
		},
		OnFailure: func(e *throughput.SessionError) {
			log.Printf("%v: %s: %v", e.Remote, e.Reason, e.Err)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.ListenAndServe(context.Background(), ":5201"); err != nil {
		log.Fatal(err)
	}
}

// A loopback test against an in-process server, printed as iperf3 -J does.
func ExampleIperfJSON() {
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
	res, err := throughput.Run(ctx, ln.Addr().String(), &throughput.Config{Duration: 200 * time.Millisecond})
	cancel()
	<-done
	if err != nil {
		log.Fatal(err)
	}
	doc, err := throughput.IperfJSON(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(doc) > 0, res.Upload.Received.Bytes > 0)
	// Output: true true
}

// Format results as iperf3's text report.
func ExampleIperfText() {
	r := &throughput.Result{Streams: []throughput.StreamResult{{ID: 1, Totals: throughput.Totals{
		Duration: 10 * time.Second,
		Sent:     throughput.Counts{Bytes: 10 << 30, BitsPerSecond: 8.59e9, Retransmits: 3},
		Received: throughput.Counts{Bytes: 10 << 30, BitsPerSecond: 8.59e9},
	}}}}
	fmt.Print(throughput.IperfText(r))
	// Output:
	// - - - - - - - - - - - - - - - - - - - - - - - - -
	// [ ID] Interval           Transfer     Bitrate         Retr
	// [  4]   0.00-10.00  sec  10.0 GBytes  8.59 Gbits/sec    3            sender
	// [  4]   0.00-10.00  sec  10.0 GBytes  8.59 Gbits/sec                  receiver
}

// Print iperf3's live report from a run's events.
func ExampleTextReport() {
	cfg := &throughput.Config{Duration: 10 * time.Second}
	rep := throughput.NewTextReport(os.Stdout, cfg, throughput.TextOptions{Format: 'm'})
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

// Measure the RTT under load: a latency probe to a sockperf-compatible echo
// server (`sockperf server` or latency.Server) runs while 8 TCP streams fill
// the path.
func ExampleRun_latency() {
	res, err := throughput.Run(context.Background(), "10.0.0.2:5201", &throughput.Config{
		Streams:  8,
		Duration: 20 * time.Second,
		Latency:  &throughput.LatencyProbe{Addr: "10.0.0.2:11111"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if res.Latency == nil { // the probe failed; res.Notes says why
		log.Fatal(res.Notes)
	}
	fmt.Printf("%.1f Gbit/s with RTT p50 %.1f us, p99 %.1f us under load\n",
		res.Upload.Received.BitsPerSecond/1e9, float64(res.Latency.P50)/1e3, float64(res.Latency.P99)/1e3)
}

// Send a file to a stock `iperf3 -s` (iperf3 -F), with sendfile from the
// file itself, and download one from a server that sends one (`iperf3 -s
// -F`, or a Server with ServerConfig.SendFrom) into memory. Without a
// duration the upload lasts until the file is sent.
func ExampleRun_sendFrom() {
	res, err := throughput.Run(context.Background(), "10.0.0.2", &throughput.Config{
		ZeroCopy: true,
		SendFrom: func(int) (io.Reader, error) { return os.Open("/var/tmp/disk.img") },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sent %d bytes at %.2f Gbit/s\n", res.Upload.Sent.Bytes, res.Upload.Received.BitsPerSecond/1e9)

	var got bytes.Buffer
	_, err = throughput.Run(context.Background(), "10.0.0.2", &throughput.Config{
		Reverse: true, Bytes: 64 << 20,
		ReceiveTo: func(int) (io.Writer, error) { return &got, nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("received %d bytes\n", got.Len())
}
