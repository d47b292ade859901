// Command iperf3 is an iperf3-like tool built only on the public API of
// github.com/netperfkit/netperfkit/throughput. It takes iperf3's flag names:
//
//	iperf3 -s [-p PORT]                      serve (several tests at once)
//	iperf3 -c HOST [-p PORT] [options]       run a test against any iperf3 3.x server
//	iperf3 [options]                         run a test against an in-process server on loopback
//
// Options: -t SECS, -n BYTES, -k BLOCKS, -P N, -R, --bidir, -u, -b RATE
// (K/M/G, 0 = unlimited), -l LEN, -w SIZE, -O SECS, -i SECS, -J,
// --get-server-output, and --rtt ADDR to measure the RTT under load against a
// sockperf-compatible UDP echo server ("local" with the in-process server).
// Text output follows iperf3's; -J prints iperf3's
// JSON document.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "iperf3: error -", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	server, jsonOut bool
	host            string
	rtt             string
	port            int
	cfg             throughput.Config
}

func parseArgs(args []string, out io.Writer) (*options, error) {
	fs := flag.NewFlagSet("iperf3", flag.ContinueOnError)
	fs.SetOutput(out)
	o := &options{}
	var secs, omit, interval float64
	var nBytes, length, window, rate string
	var blocks int64
	fs.BoolVar(&o.server, "s", false, "run in server mode")
	fs.StringVar(&o.host, "c", "", "run in client mode, connecting to `host`")
	fs.IntVar(&o.port, "p", throughput.DefaultPort, "server port")
	fs.Float64Var(&secs, "t", 10, "time in seconds to transmit")
	fs.StringVar(&nBytes, "n", "", "number of bytes to transmit (K/M/G), instead of -t")
	fs.Int64Var(&blocks, "k", 0, "number of blocks to transmit, instead of -t or -n")
	fs.IntVar(&o.cfg.Streams, "P", 1, "number of parallel client streams")
	fs.BoolVar(&o.cfg.Reverse, "R", false, "reverse mode (server sends)")
	fs.BoolVar(&o.cfg.Bidir, "bidir", false, "bidirectional mode")
	fs.BoolVar(&o.cfg.UDP, "u", false, "use UDP")
	fs.StringVar(&rate, "b", "", "target bitrate in bits/sec per stream (K/M/G; 0 = unlimited)")
	fs.StringVar(&length, "l", "", "length of buffer to read or write (K/M)")
	fs.StringVar(&window, "w", "", "socket buffer size (K/M)")
	fs.Float64Var(&omit, "O", 0, "omit the first n seconds")
	fs.Float64Var(&interval, "i", 1, "seconds between interval reports (0 = none)")
	fs.BoolVar(&o.jsonOut, "J", false, "output in JSON format")
	fs.BoolVar(&o.cfg.GetServerOutput, "get-server-output", false, "get results from server")
	fs.StringVar(&o.rtt, "rtt", "", "measure RTT under load against a sockperf-compatible UDP echo server at `host:port` (\"local\" with the in-process server)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.server && o.host != "" {
		return nil, errors.New("cannot be both server and client")
	}
	c := &o.cfg
	c.Duration = time.Duration(secs * float64(time.Second))
	c.Omit = time.Duration(omit * float64(time.Second))
	c.Blocks = blocks
	c.Interval = time.Duration(interval * float64(time.Second))
	if interval <= 0 {
		c.Interval = -1
	}
	var err error
	if c.Bytes, err = parseSize(nBytes, 1024); err != nil {
		return nil, fmt.Errorf("-n: %w", err)
	}
	if c.Bytes > 0 || c.Blocks > 0 {
		c.Duration = 0
	}
	l, err := parseSize(length, 1024)
	if err != nil {
		return nil, fmt.Errorf("-l: %w", err)
	}
	c.BlockLen = int(l)
	w, err := parseSize(window, 1024)
	if err != nil {
		return nil, fmt.Errorf("-w: %w", err)
	}
	c.Window = int(w)
	if rate != "" {
		b, err := parseSize(rate, 1000)
		if err != nil {
			return nil, fmt.Errorf("-b: %w", err)
		}
		c.Bitrate = float64(b)
		if b == 0 {
			c.Bitrate = throughput.Unlimited
		}
	}
	return o, nil
}

// parseSize reads iperf3's sizes: a number with an optional K, M, G or T
// suffix in steps of base (1024 for bytes, 1000 for rates).
func parseSize(s string, base float64) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := 1.0
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = base
	case "M":
		mult = base * base
	case "G":
		mult = base * base * base
	case "T":
		mult = base * base * base * base
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(v * mult), nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseArgs(args, out)
	if err != nil {
		return err
	}
	if o.server {
		return serve(ctx, o, out)
	}
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	if o.host == "" {
		// No -c and no -s: test against an in-process server on loopback.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv, err := throughput.NewServer(nil)
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(sctx, ln) }()
		defer func() {
			cancel()
			<-done
		}()
		addr = ln.Addr().String()
		if o.rtt == "local" {
			echo, err := latency.NewServer(nil)
			if err != nil {
				return err
			}
			echoAddr, serveEcho, err := echo.Listen(sctx, "udp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			go func() { _ = serveEcho() }()
			o.rtt = echoAddr.String()
		}
	}
	if o.rtt != "" {
		o.cfg.Latency = &throughput.LatencyProbe{Addr: o.rtt}
	}
	return client(ctx, o, addr, out)
}

func client(ctx context.Context, o *options, addr string, out io.Writer) error {
	cfg := o.cfg
	header := false
	if !o.jsonOut {
		h, p, _ := net.SplitHostPort(addr)
		fmt.Fprintf(out, "Connecting to host %s, port %s\n", h, p)
		cfg.OnInterval = func(iv throughput.Interval) {
			if !header {
				fmt.Fprint(out, throughput.IntervalHeader(&throughput.Result{Config: throughput.Config{UDP: cfg.UDP}}))
				header = true
			}
			fmt.Fprint(out, throughput.IntervalText(iv, cfg.UDP))
		}
	}
	res, err := throughput.Run(ctx, addr, &cfg)
	if err != nil {
		return err
	}
	if o.jsonOut {
		doc, err := throughput.IperfJSON(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", doc)
		return err
	}
	for _, s := range res.Streams {
		fmt.Fprintf(out, "[%3d] local %s connected to %s\n", s.ID+4, s.LocalAddr, s.RemoteAddr)
	}
	printServerTCP(out, res)
	fmt.Fprint(out, throughput.SummaryText(res))
	if res.ServerOutputText != "" {
		fmt.Fprintf(out, "\nServer output:\n%s", res.ServerOutputText)
	}
	fmt.Fprintln(out, "\niperf Done.")
	return nil
}

func serve(ctx context.Context, o *options, out io.Writer) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(o.port)))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "-----------------------------------------------------------\nServer listening on %d (several tests at once)\n-----------------------------------------------------------\n", o.port)
	cfg := &throughput.ServerConfig{OnResult: func(r *throughput.Result) {
		if o.jsonOut {
			if doc, err := throughput.IperfJSON(r); err == nil {
				fmt.Fprintf(out, "%s\n", doc)
			}
			return
		}
		fmt.Fprintf(out, "Accepted connection from %s\n%s", r.RemoteAddr, throughput.IperfText(r))
	}}
	srv, err := throughput.NewServer(cfg)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}

// printServerTCP shows the server's TCP statistics for the streams it sent
// (reverse and bidirectional tests), which arrive only with its results:
// iperf3's own client shows none there.
func printServerTCP(out io.Writer, res *throughput.Result) {
	var lines []throughput.Interval
	for _, iv := range res.Intervals {
		var ss []throughput.StreamInterval
		for _, s := range iv.Streams {
			if s.Reverse && s.TCP != nil {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			iv.Streams, iv.Upload = ss, nil
			lines = append(lines, iv)
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(out, "Server-side sender statistics of the streams it sent:")
	fmt.Fprint(out, throughput.IntervalHeader(res))
	for _, iv := range lines {
		fmt.Fprint(out, throughput.IntervalText(iv, false))
	}
}
