package throughput_test

import (
	"bytes"
	"context"
	"errors"
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
	total := res.Total()
	fmt.Printf("%.2f Gbit/s, %d retransmits\n", total.Received.BitsPerSecond/1e9, total.Sent.Retransmits)
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
// logging each result and each refused or failed session.
func ExampleServer_ListenAndServe() {
	srv, err := throughput.NewServer(&throughput.ServerConfig{
		MaxTests:    8,
		MaxDuration: time.Minute,
		OnListen:    func(a net.Addr) { log.Printf("listening on %v", a) },
		OnResult: func(r throughput.Result) {
			t := r.Total()
			log.Printf("%s: %.2f Gbit/s", r.RemoteAddr, t.Received.BitsPerSecond/1e9)
		},
		OnFailure: func(remote net.Addr, err error) {
			var se *throughput.SessionError
			if errors.As(err, &se) {
				log.Printf("%v: %s: %v", remote, se.Reason, se.Err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.ListenAndServe(context.Background(), "tcp", ":5201"); err != nil {
		log.Fatal(err)
	}
}

// A loopback test against an in-process server on 127.0.0.1:0: Serve
// returns ctx.Err() once the context ends.
func ExampleServer_Serve() {
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
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Total().Received.Bytes >= 1<<20, errors.Is(<-done, context.Canceled))
	// Output: true true
}

// The README's throughput snippet, run against an in-process server
// (TestReadmeSnippet keeps the two the same and runs it).
func Example_readme() {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := throughput.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = srv.Serve(sctx, ln) }()
	addr := ln.Addr().String()

	// README begin
	res, err := throughput.Run(ctx, addr, &throughput.Config{
		Streams:    4,
		Reverse:    true, // the server sends, like iperf3 -R; without it the client sends
		Duration:   time.Second,
		OnInterval: func(iv throughput.Interval) { /* live progress */ },
	})
	if err != nil {
		log.Fatal(err)
	}
	total := res.Total() // every stream, whichever way the data flowed
	fmt.Printf("%.2f Gbit/s received, %d retransmits\n",
		total.Received.BitsPerSecond/1e9, total.Sent.Retransmits)
	// README end
}

// Send a file to a stock `iperf3 -s` (iperf3 -F), with sendfile from the
// file itself, and download one from a server that sends one (`iperf3 -s
// -F`, or a Server with ServerConfig.SendFrom) into memory. Without a
// duration the upload lasts until the file is sent.
func ExampleRun_sendFrom() {
	res, err := throughput.Run(context.Background(), "10.0.0.2", &throughput.Config{
		SendFrom:      func(int) (io.Reader, error) { return os.Open("/var/tmp/disk.img") },
		SocketOptions: throughput.SocketOptions{ZeroCopy: true},
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

// Where did the datagrams of a UDP test go: one line per direction from
// the loss ledger (README: "where did my datagrams go"). Against a stock
// iperf3 server the receiving end's lines read unknown.
func ExampleRun_ledger() {
	res, err := throughput.Run(context.Background(), "iperf.example.net:5201", &throughput.Config{
		UDP: true, Bitrate: 100e6, Duration: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	// README begin
	for _, sum := range []*throughput.Summary{res.Upload, res.Download} {
		if sum != nil && sum.Ledger.Lost() {
			fmt.Println(sum.Ledger) // offered 7134 = sender_refused 2082 + path 101 + ...
			top, _ := sum.Ledger.Largest()
			fmt.Println("most went to", top.Name, "-", top.Source)
		}
	}
	// README end
}
