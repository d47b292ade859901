// Command iperf3 is a drop-in for iperf3 3.21 built only on the public API of
// github.com/netperfkit/netperfkit/throughput: the same options (short,
// long, combined, --opt=value), the same text, -J and --json-stream output,
// and the same usage errors and exit statuses.
//
//	iperf3 -s [-p PORT] [-1] [-D] [-J]       serve (several tests at once)
//	iperf3 -c HOST [options]                 test against any iperf3 3.x server
//	iperf3 --in-process [options]            test against an in-process server on loopback
//
// netperfkit adds --rtt HOST:PORT (RTT under load against a
// sockperf-compatible UDP echo server, "local" with --in-process),
// --in-process, --stream-threads (on by default: each TCP stream gets an
// OS thread, as in 3.21), --jitter-clock (read: iperf3's arrival times for
// the UDP jitter instead of the kernel's), --keep-rate (a UDP sender drops
// what its host's queue refuses and counts it, instead of waiting for the
// queue), and for servers --allowed-clients,
// --max-tests-per-client and --max-tests (1 for iperf3's one test at a
// time).
//
// Deliberate differences from 3.21 (README.md has the details): the server
// runs up to 4 tests at once; -n and -k stop exactly at the count (3.21
// goes on to the end of the interval in which it is reached, an artefact
// of its timer-driven main loop); UDP jitter is the path's, from the
// kernel's arrival times (--jitter-clock read for 3.21's read times), and
// below 0.001 ms is printed with two significant digits instead of 0.000;
// stream ids are numbered, not file descriptors; -D re-executes the tool
// in a new session (Go cannot fork); -d prints what the library's events
// report; -F with --bidir is refused (3.21 truncates the file it would
// send).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// signalError is the cause of the run's context when a signal ends it.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// describe is 3.21's "by signal Interrupt(2)".
func (e *signalError) describe() string {
	if s, ok := e.sig.(syscall.Signal); ok {
		name := map[syscall.Signal]string{syscall.SIGINT: "Interrupt", syscall.SIGTERM: "Terminated", syscall.SIGHUP: "Hangup"}[s]
		if name == "" {
			name = s.String()
		}
		return fmt.Sprintf("by signal %s(%d)", name, int(s))
	}
	return "by signal " + e.sig.String()
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		cancel(&signalError{sig: s})
	}()
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	cancel(nil)
	os.Exit(code)
}

// run is the whole program: args include the program name; it returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args[1:])
	if err != nil {
		printParseError(stderr, args[0], err)
		return 1
	}
	switch {
	case o.help:
		fmt.Fprint(stdout, usageLong)
		return 0
	case o.showVersion:
		printVersion(stdout)
		return 0
	case o.daemon && os.Getenv(daemonEnv) == "":
		// The parent starts the server in the background and leaves.
		if err := daemonize(args); err != nil {
			fmt.Fprintf(stderr, "iperf3: error - unable to become a daemon: %s\n", errnoText(err))
			return 1
		}
		return 0
	}
	out, errOut, closeLog, err := openOutput(o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
		return 1
	}
	defer closeLog()
	applyDataPath(o)
	applyCompat(o)
	warnNotNeeded(o, errOut)
	warnNotCarriedOut(o, errOut)
	if err := loadAuth(o); err != nil {
		var pe *paramError
		if errors.As(err, &pe) {
			// 3.21 prints the key or file error, then the parameter error.
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					if e != error(pe) {
						fmt.Fprintf(errOut, "iperf3: %v\n", e)
					}
				}
			}
			printParseError(errOut, args[0], pe)
			return 1
		}
		fmt.Fprintf(errOut, "iperf3: error - %v\n", err)
		return 1
	}
	if o.pidfile != "" {
		remove, err := createPidfile(o.pidfile)
		if err != nil {
			return exitWith(errOut, err)
		}
		defer remove()
	}
	if o.affinity >= 0 {
		if err := setAffinity(o.affinity); err != nil {
			fmt.Fprintf(errOut, "iperf3: error - unable to set CPU affinity: %s\n", errnoText(err))
			return 1
		}
	}
	if o.server {
		return serve(ctx, o, out, errOut)
	}
	return client(ctx, o, out, errOut)
}

// openOutput applies --logfile (3.21 appends to it, errors included),
// --timestamps, -T and --forceflush.
func openOutput(o *options, stdout, stderr io.Writer) (out, errOut io.Writer, closeFn func(), err error) {
	closeFn = func() {}
	p := &prefixWriter{w: stdout, stamp: o.timestamps, title: o.title, now: time.Now, flush: o.forceFlush}
	if o.logfile != "" {
		f, err := os.OpenFile(o.logfile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("unable to open log file: %w", err)
		}
		p.w, p.syncer, p.flush, stderr = f, f, true, f
		closeFn = func() { _ = f.Close() }
	}
	return p, stderr, closeFn, nil
}

func client(ctx context.Context, o *options, out, errOut io.Writer) int {
	if o.verbose && !o.json {
		printSystem(out)
	}
	host, addr, stop, err := target(ctx, o)
	if err != nil {
		return fail(o, out, errOut, err)
	}
	defer stop()
	cfg := o.cfg
	cfg.StreamThreads, cfg.JitterRead = o.streamThreads, o.jitterRead
	cfg.UDPKeepRate = o.keepRate
	txt := newTextReport(out, o)
	var stream *iperf3fmt.JSONStream
	if o.jsonStream {
		stream = iperf3fmt.NewJSONStream(out, o.cfg.Interval, &throughput.Result{
			Role: "client", Config: o.cfg, RemoteAddr: addr, Start: time.Now(),
		})
	}
	// 3.21 prints "Connecting to host" once the server has taken the
	// control connection, so a failed connect prints only the error.
	announced := false
	announce := func(r *throughput.Result) {
		if !announced && !o.json {
			announced = true
			connecting(out, o, txt, host, r)
		}
	}
	dbg := newDebugLog(out, o.debug, "client")
	cfg.OnEvent = func(e throughput.Event) {
		dbg.event(e)
		if e.Kind == throughput.EventInterval && o.noIntervals && e.Interval.Omitted {
			return // 3.21 reports nothing of the omit period with -i 0
		}
		switch {
		case stream != nil && e.Kind == throughput.EventStart:
			stream.Start(o.view(e.Result))
		case stream != nil && e.Kind == throughput.EventInterval:
			stream.Interval(*e.Interval)
		case o.json:
		case e.Kind == throughput.EventStart:
			announce(e.Result)
			// 3.21 prints these as its streams connect.
			for _, s := range e.Result.Streams {
				txt.Connected(s)
			}
			startingTest(out, o, e.Result)
		case e.Kind == throughput.EventInterval:
			txt.Interval(*e.Interval)
		}
	}
	res, err := runTest(ctx, o, addr, &cfg)
	var sig *signalError
	if err != nil && !errors.As(context.Cause(ctx), &sig) {
		connected := res != nil && res.RemoteAddr != "" // Run's result is never nil; it has addresses once connected
		if connected && (!errors.Is(err, throughput.ErrAccessDenied) || errors.Is(err, throughput.ErrAuthFailed)) {
			announce(res) // refused only after the parameters, as 3.21's on_connect
		}
		if res != nil && errors.Is(err, throughput.ErrServerTerminated) && len(res.Streams) > 0 {
			// As 3.21: the summary of what ran, then the error.
			return terminated(o, o.view(res), out, errOut, txt, stream)
		}
		return fail(o, out, errOut, err)
	}
	if res == nil {
		return fail(o, out, errOut, err)
	}
	report(o, o.view(res), out, txt, stream, sig)
	if sig != nil {
		fmt.Fprintf(errOut, "iperf3: interrupt - the client has terminated %s\n", sig.describe())
	}
	return 0
}

// terminated reports a test the server ended (SERVER_TERMINATE) as 3.21
// does: the summary so far, then "the server has terminated"; exit 1.
func terminated(o *options, res *throughput.Result, out, errOut io.Writer, txt *iperf3fmt.TextReport, stream *iperf3fmt.JSONStream) int {
	msg := msgServerTerm
	switch {
	case stream != nil:
		stream.Error("error - " + msg)
		stream.End(res)
	case o.json:
		printJSON(out, res, msg)
	default:
		txt.Summary(res)
		fmt.Fprintf(errOut, "iperf3: error - %s\n", msg)
	}
	return 1
}

// report prints the end of a client run in the chosen output format.
func report(o *options, res *throughput.Result, out io.Writer, txt *iperf3fmt.TextReport, stream *iperf3fmt.JSONStream, sig *signalError) {
	var errMsg string
	if sig != nil {
		errMsg = "interrupt - the client has terminated " + sig.describe()
	}
	switch {
	case stream != nil:
		if sig != nil {
			stream.Error(errMsg)
		}
		stream.End(res)
		if o.jsonStreamFull {
			// 3.21 (3.20+) follows the stream with the whole -J document.
			printJSONWith(out, res, errMsg, o.rttResult)
		}
	case o.json:
		printJSONWith(out, res, errMsg, o.rttResult)
	default:
		txt.Summary(res)
		if o.verbose {
			congestionLines(out, res)
		}
		extras(out, txt, res, o.rttResult)
		if res.ServerOutputText != "" {
			fmt.Fprintf(out, "\nServer output:\n%s", res.ServerOutputText)
		}
		if sig == nil {
			txt.Done()
		}
	}
}

// newTextReport is the text report of this run's role and options.
func newTextReport(w io.Writer, o *options) *iperf3fmt.TextReport {
	return iperf3fmt.NewTextReport(w, &o.cfg, iperf3fmt.Options{Format: o.format, Server: o.server, Verbose: o.verbose})
}

// printJSON prints res as 3.21's -J document, with an "error" member when
// errMsg is not empty.
func printJSON(out io.Writer, res *throughput.Result, errMsg string) {
	printJSONWith(out, res, errMsg, nil)
}

// printJSONWith is printJSON with netperfkit's "latency" member, the RTT
// under load (--rtt), last when lat is not nil.
func printJSONWith(out io.Writer, res *throughput.Result, errMsg string, lat *latency.PingPongResult) {
	doc, err := iperf3fmt.JSON(res)
	if err == nil && lat != nil {
		doc, err = withLatency(doc, lat)
	}
	if err != nil {
		fmt.Fprintf(out, "{\"error\": %q}\n", err.Error())
		return
	}
	if errMsg != "" {
		var m map[string]any
		if json.Unmarshal(doc, &m) == nil {
			m["error"] = errMsg
			doc, _ = json.MarshalIndent(m, "", "\t")
		}
	}
	fmt.Fprintf(out, "%s\n", doc)
}

// view is res as this run reports it: with -i 0, the interval setting
// that 3.21 reports (0) and no intervals of the omit period.
func (o *options) view(res *throughput.Result) *throughput.Result {
	if !o.noIntervals || res == nil {
		return res
	}
	r := *res
	r.Config.Interval = -1
	r.Intervals = nil
	for _, iv := range res.Intervals {
		if !iv.Omitted {
			r.Intervals = append(r.Intervals, iv)
		}
	}
	return &r
}

// target resolves where the client connects: -c HOST (with -4/-6 choosing
// the address family) or, with --in-process, a server started here.
func target(ctx context.Context, o *options) (host, addr string, stop func(), err error) {
	stop = func() {}
	if o.inProcess && !o.client {
		return inProcess(ctx, o)
	}
	host = o.host
	if o.ipv4 || o.ipv6 {
		ip, err := resolve(ctx, host, o.ipv6)
		if err != nil {
			return "", "", stop, err
		}
		return host, net.JoinHostPort(ip.String(), strconv.Itoa(o.port)), stop, nil
	}
	return host, net.JoinHostPort(host, strconv.Itoa(o.port)), stop, nil
}

// resolve looks host up in one address family (-4 or -6), failing with
// getaddrinfo's words.
func resolve(ctx context.Context, host string, v6 bool) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap().Is4() == v6 {
			return netip.Addr{}, &connectError{cause: msgAddrFamily}
		}
		return ip, nil
	}
	network := "ip4"
	if v6 {
		network = "ip6"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, network, host)
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		// A name with addresses of the other family only is found;
		// one without any is not.
		if _, e := net.DefaultResolver.LookupNetIP(ctx, "ip", host); e == nil {
			return netip.Addr{}, &connectError{cause: msgAddrFamily}
		}
		return netip.Addr{}, &connectError{cause: dnsCause(dns)}
	case errors.As(err, &dns):
		return netip.Addr{}, &connectError{cause: dnsCause(dns)}
	case err != nil:
		return netip.Addr{}, err
	case len(ips) == 0:
		return netip.Addr{}, &connectError{cause: msgAddrFamily}
	}
	return ips[0], nil
}

func inProcess(ctx context.Context, o *options) (host, addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	srv, err := throughput.NewServer(&throughput.ServerConfig{SocketOptions: throughput.SocketOptions{StreamThreads: o.streamThreads, JitterRead: o.jitterRead}})
	if err != nil {
		cancel()
		_ = ln.Close()
		return "", "", nil, err
	}
	go func() { done <- srv.Serve(sctx, ln) }()
	stop = func() {
		cancel()
		<-done
	}
	if o.rtt == "local" {
		echo, err := latency.NewServer(nil)
		if err == nil {
			var pc net.PacketConn
			pc, err = (&net.ListenConfig{}).ListenPacket(sctx, "udp", "127.0.0.1:0")
			if err == nil {
				go func() { _ = echo.ServePacket(sctx, pc) }()
				o.rtt = pc.LocalAddr().String()
			}
		}
		if err != nil {
			stop()
			return "", "", nil, err
		}
	}
	tcp := ln.Addr().(*net.TCPAddr)
	o.port = tcp.Port
	return tcp.IP.String(), ln.Addr().String(), stop, nil
}
