// Command iperf3 is a drop-in for iperf3 3.21 built only on the public API of
// github.com/netperfkit/netperfkit/throughput: the same options (short,
// long, combined, --opt=value), the same text, -J and --json-stream output,
// and the same usage errors and exit statuses.
//
//	iperf3 -s [-p PORT] [-1] [-J]            serve (several tests at once)
//	iperf3 -c HOST [options]                 test against any iperf3 3.x server
//	iperf3 --in-process [options]            test against an in-process server on loopback
//
// netperfkit adds --rtt HOST:PORT (RTT under load against a
// sockperf-compatible UDP echo server, "local" with --in-process),
// --in-process, --stream-threads (on by default: each TCP stream gets an
// OS thread, as in 3.21), and for servers --allowed-clients and
// --max-tests-per-client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
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
	}
	out, errOut, closeLog, err := openOutput(o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
		return 1
	}
	defer closeLog()
	applyDataPath(o)
	warnNotNeeded(o, errOut)
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
	host, addr, stop, err := target(ctx, o)
	if err != nil {
		return fail(o, out, errOut, err)
	}
	defer stop()
	cfg := o.cfg
	cfg.StreamThreads = o.streamThreads
	if o.rtt != "" {
		cfg.Latency = &throughput.LatencyProbe{Addr: o.rtt}
	}
	txt := newTextReport(out, o)
	var stream *jsonStream
	switch {
	case o.jsonStream:
		stream = newJSONStream(out, o, addr)
	case !o.json:
		txt.Connecting(host, o.port)
	}
	cfg.OnEvent = func(e throughput.Event) {
		switch {
		case stream != nil && e.Kind == throughput.EventStart:
			stream.start(e.Result)
		case stream != nil && e.Kind == throughput.EventInterval:
			stream.interval(*e.Interval)
		case o.json:
		case e.Kind == throughput.EventStart:
			// 3.21 prints these as its streams connect.
			for _, s := range e.Result.Streams {
				txt.Connected(s)
			}
		case e.Kind == throughput.EventInterval:
			txt.Interval(*e.Interval)
		}
	}
	res, err := throughput.Run(ctx, addr, &cfg)
	var sig *signalError
	if err != nil && !errors.As(context.Cause(ctx), &sig) {
		return fail(o, out, errOut, err)
	}
	if res == nil {
		return fail(o, out, errOut, err)
	}
	report(o, res, out, txt, stream, sig)
	if sig != nil {
		fmt.Fprintf(errOut, "iperf3: interrupt - the client has terminated %s\n", sig.describe())
	}
	return 0
}

// report prints the end of a client run in the chosen output format.
func report(o *options, res *throughput.Result, out io.Writer, txt *throughput.TextReport, stream *jsonStream, sig *signalError) {
	switch {
	case stream != nil:
		if sig != nil {
			stream.error("interrupt - the client has terminated " + sig.describe())
		}
		stream.end(res)
	case o.json:
		printJSON(out, res, sig)
	default:
		txt.Summary(res)
		txt.Extras(res)
		if res.ServerOutputText != "" {
			fmt.Fprintf(out, "\nServer output:\n%s", res.ServerOutputText)
		}
		if sig == nil {
			txt.Done()
		}
	}
}

// newTextReport is the text report of this run's role and options.
func newTextReport(w io.Writer, o *options) *throughput.TextReport {
	return throughput.NewTextReport(w, &o.cfg, throughput.TextOptions{Format: o.format, Server: o.server, Verbose: o.verbose})
}

func printJSON(out io.Writer, res *throughput.Result, sig *signalError) {
	doc, err := throughput.IperfJSON(res)
	if err != nil {
		fmt.Fprintf(out, "{\"error\": %q}\n", err.Error())
		return
	}
	if sig != nil {
		var m map[string]any
		if json.Unmarshal(doc, &m) == nil {
			m["error"] = "interrupt - the client has terminated " + sig.describe()
			doc, _ = json.MarshalIndent(m, "", "\t")
		}
	}
	fmt.Fprintf(out, "%s\n", doc)
}

// iperfMessage words the errors scripts grep for as 3.21 words them.
func iperfMessage(err error) string {
	var op *net.OpError
	var errno syscall.Errno
	switch {
	case errors.Is(err, throughput.ErrAccessDenied):
		return accessDenied(err)
	case errors.Is(err, throughput.ErrRecvIdle):
		return "idle timeout for receiving data"
	case errors.Is(err, io.EOF):
		return "control socket has closed unexpectedly"
	case errors.As(err, &op) && op.Op == "dial":
		cause := op.Err.Error()
		if errors.As(op.Err, &errno) {
			cause = errno.Error()
		}
		if cause != "" {
			cause = strings.ToUpper(cause[:1]) + cause[1:] // as C's strerror
		}
		return "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: " + cause
	}
	return err.Error()
}

// accessDenied words a refusal as 3.21's client words it: a server that
// sends "test authorization failed" (ours), one that closes the connection
// after reading the credentials (3.21's own), or a busy one.
func accessDenied(err error) string {
	var se *throughput.ServerError
	switch {
	case errors.As(err, &se) && errors.Is(err, throughput.ErrAuthFailed):
		return "test authorization failed"
	case errors.Is(err, throughput.ErrAuthFailed):
		return "control socket has closed unexpectedly"
	}
	return "the server is busy running a test. try again later"
}

// fail reports an error as 3.21 does in each output mode and returns 1.
func fail(o *options, out, errOut io.Writer, err error) int {
	msg := iperfMessage(err)
	var se *throughput.ServerError
	if errors.As(err, &se) && msg == "test authorization failed" {
		// 3.21 prints the server's error, then its own.
		if o.jsonStream {
			(&jsonStream{w: out}).error("SERVER ERROR - " + msg)
		} else if !o.json {
			fmt.Fprintf(errOut, "iperf3: SERVER ERROR - %s\n", msg)
		}
	}
	switch {
	case o.jsonStream:
		(&jsonStream{w: out}).error("error - " + msg)
	case o.json:
		b, _ := json.MarshalIndent(map[string]any{"start": map[string]any{}, "intervals": []any{}, "end": map[string]any{}, "error": msg}, "", "\t")
		fmt.Fprintf(out, "%s\n", b)
	default:
		fmt.Fprintf(errOut, "iperf3: error - %s\n", msg)
	}
	return 1
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
		network := "ip4"
		if o.ipv6 {
			network = "ip6"
		}
		ips, err := net.DefaultResolver.LookupIP(ctx, network, host)
		if err != nil || len(ips) == 0 {
			return "", "", stop, fmt.Errorf("unable to connect to server: %s has no %s address: %w", host, network, err)
		}
		return host, net.JoinHostPort(ips[0].String(), strconv.Itoa(o.port)), stop, nil
	}
	return host, net.JoinHostPort(host, strconv.Itoa(o.port)), stop, nil
}

func inProcess(ctx context.Context, o *options) (host, addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	srv, err := throughput.NewServer(&throughput.ServerConfig{StreamThreads: o.streamThreads})
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
