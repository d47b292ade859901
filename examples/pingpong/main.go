// Command pingpong is a sockperf-like latency tool built only on the public
// API of github.com/netperfkit/netperfkit/latency.
//
// Without -addr it starts an in-process server on loopback and measures it,
// so `go run ./examples/pingpong` works on a fresh machine. With -addr it
// measures a remote `sockperf server` (or `pingpong -server`):
//
//	pingpong -addr 10.0.0.2:11111 -t 5s -m 64 -spin
//	pingpong -addr 10.0.0.2:11111 -tcp -mps 10000      # under-load
//	pingpong -server -addr :11111                       # serve sockperf clients
//	pingpong -addr 10.0.0.2:11111 -slo p99.9=200us      # highest rate meeting an SLO
//
// Flags: -addr host:port, -tcp, -t duration, -n count, -m size, -mps rate
// (under-load, every 100th message asks for a reply), -arrival
// uniform|poisson (under-load send times), -slo pP=D (search for the highest
// under-load rate whose round-trip percentile meets it, every message asking
// for a reply: steps of -step from -start messages per second, doubling
// until one breaks, then a bisection), -spin (low-latency mode:
// burns a core), -server, -hist FILE (HdrHistogram interval log of the
// round-trip times, in nanoseconds), -kernel=false (no kernel view: it
// costs the application's view about a microsecond) and -json (one JSON
// object on stdout).
//
// Sharded runs (several pingpong processes, on one host or many, merged by
// `cachebench merge`): -shard I/N, -start-at TIME (RFC 3339; a past time is
// refused), -out FILE (the shard's result with per-interval HDR histograms
// on a wall-clock grid) and -interval (1s). Each shard has its own
// connection. The latency API reports round trips without their times, so
// a round trip's interval is placed by its share of the run's time (the
// sum of the round trips before it over the sum of all): exact for the
// distribution, approximate at interval edges by the client's own gaps.
//
// On linux a ping-pong run leads with the kernel-to-kernel round trip (the
// request's transmit stamp to the reply's receive stamp, both the client
// kernel's: the path and the server, none of the client's scheduling),
// then prints the application's view in sockperf's form; elsewhere, and
// under load, a line says there are no kernel stamps and why.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"text/tabwriter"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/slo"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

type options struct {
	addr     string
	tcp      bool
	duration time.Duration
	count    int64
	size     int
	mps      int
	arrival  latency.Arrival
	spin     bool
	kernel   bool
	slo      *slo.SLO
	start    float64
	step     time.Duration
	server   bool
	hist     string
	json     bool
	shard    string        // -shard I/N: shard.go
	startAt  string        // -start-at RFC 3339
	out      string        // -out FILE: the shard's result
	interval time.Duration // -interval of a sharded run's histograms
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "", "server `host:port` (default: an in-process server on loopback; with -server: the address to serve, :11111)")
	fs.BoolVar(&o.tcp, "tcp", false, "use TCP instead of UDP")
	fs.DurationVar(&o.duration, "t", 2*time.Second, "run `duration`")
	fs.Int64Var(&o.count, "n", 0, "stop after `count` messages instead of after -t")
	fs.IntVar(&o.size, "m", 14, "message `size` in bytes, header included (>= 14)")
	fs.IntVar(&o.mps, "mps", 0, "under-load: send `rate` messages per second, every 100th asks for a reply")
	arrival := fs.String("arrival", "uniform", "under-load send times: uniform or poisson")
	sloFlag := fs.String("slo", "", "search for the highest under-load rate meeting `pP=D`, e.g. p99.9=200us")
	fs.Float64Var(&o.start, "start", 1000, "-slo: first rate of the search, messages per second")
	fs.DurationVar(&o.step, "step", time.Second, "-slo: duration of each step")
	fs.BoolVar(&o.spin, "spin", false, "low-latency mode: spin on a raw socket (burns a core; linux)")
	fs.BoolVar(&o.kernel, "kernel", true, "ping-pong: also take the kernel-to-kernel round trip (linux; about 1 us more per round trip in the application's view: -kernel=false to compare that view with sockperf's)")
	fs.BoolVar(&o.server, "server", false, "serve sockperf clients at -addr until interrupted")
	fs.StringVar(&o.hist, "hist", "", "write the round-trip times as an HdrHistogram log to `file`")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	fs.StringVar(&o.shard, "shard", "", "run shard `I/N` of N, with its own connection (e.g. 0/4)")
	fs.StringVar(&o.startAt, "start-at", "", "start at this wall-clock `time` (RFC 3339), the same for every shard; a past time is refused")
	fs.StringVar(&o.out, "out", "", "write the shard's result with per-interval histograms to `FILE` (- for stdout), for cachebench merge")
	fs.DurationVar(&o.interval, "interval", time.Second, "histogram interval of a sharded run, the same for every shard")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.arrival, err = latency.ParseArrival(*arrival); err != nil {
		return o, fmt.Errorf("-arrival: %w", err)
	}
	if *sloFlag != "" {
		objective, err := slo.Parse(*sloFlag)
		if err != nil {
			return o, fmt.Errorf("-slo: %w", err)
		}
		o.slo = &objective
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	network := "udp"
	if o.tcp {
		network = "tcp"
	}
	if o.server {
		if o.addr == "" {
			o.addr = ":11111"
		}
		return serve(ctx, network, o.addr, stderr)
	}
	// Decided before o.addr is filled in, so that a user's -addr on loopback
	// is not taken for the in-process server.
	local := o.addr == ""
	if local {
		addr, stopServer, err := startLocal(ctx, network)
		if err != nil {
			return err
		}
		defer stopServer()
		o.addr = addr
	}
	cfg := &latency.PingPongConfig{
		Network:     network,
		MessageSize: o.size,
		MPS:         o.mps,
		Arrival:     o.arrival,
		// The kernel view leads this tool's text; under-load runs
		// have none, and say so.
		KernelStamps: o.kernel,
	}
	if o.count > 0 {
		cfg.Count = o.count
	} else {
		cfg.Duration = o.duration
	}
	if o.spin {
		cfg.Spin = time.Millisecond
	}
	if o.slo != nil {
		return searchSLO(ctx, stdout, stderr, o, cfg)
	}
	if o.shard != "" || o.startAt != "" || o.out != "" {
		return runShard(ctx, o, cfg, stdout, stderr)
	}
	start := time.Now()
	res, err := latency.PingPong(ctx, o.addr, cfg)
	if err != nil && res.Sent == 0 {
		return err // nothing measured: no table of zeros
	}
	if o.hist != "" {
		if herr := writeHist(o.hist, res, start); herr != nil {
			return herr
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
	} else if terr := writeText(stdout, o.addr, local, cfg, res); terr != nil {
		return terr
	}
	return err
}

func serve(ctx context.Context, network, addr string, stderr io.Writer) error {
	// latency.Server's doc: on one CPU (taskset) GOMAXPROCS is 1, and the
	// runtime then takes the P from every read that waits 20 us and
	// polls every 20 us meanwhile; a second P, idle, avoids both.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	srv, err := latency.NewServer(&latency.ServerConfig{OnListen: func(a net.Addr) {
		fmt.Fprintf(stderr, "pingpong: serving sockperf clients over %s on %s (Ctrl-C to stop)\n", network, a)
	}})
	if err != nil {
		return err
	}
	err = srv.ListenAndServe(ctx, network, addr)
	if errors.Is(err, context.Canceled) {
		err = nil // Ctrl-C is how a server stops
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "pingpong: %d messages, %d replies, %d rejected\n", st.Messages, st.Replies, st.Rejected)
	return err
}

// startLocal starts an in-process server on a loopback port.
func startLocal(ctx context.Context, network string) (string, func(), error) {
	srv, err := latency.NewServer(nil)
	if err != nil {
		return "", nil, err
	}
	var lc net.ListenConfig
	var a net.Addr
	var serveLocal func(context.Context) error
	if network == "tcp" {
		ln, err := lc.Listen(ctx, network, "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		a, serveLocal = ln.Addr(), func(ctx context.Context) error { return srv.Serve(ctx, ln) }
	} else {
		pc, err := lc.ListenPacket(ctx, network, "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		a, serveLocal = pc.LocalAddr(), func(ctx context.Context) error { return srv.ServePacket(ctx, pc) }
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serveLocal(ctx) }()
	return a.String(), func() { cancel(); <-done }, nil
}

func writeHist(path string, res *latency.PingPongResult, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = writeHistLog(f, res.Recorder.Snapshot(), start, start.Add(res.RunTime))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeHistLog writes h as the one interval from..to of an HdrHistogram
// interval log (version 1.3), which HistogramLogProcessor and the Go, Java
// and C log readers read; h is not modified.
func writeHistLog(w io.Writer, h *hdrhistogram.Histogram, from, to time.Time) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	ms := from.UnixMilli()
	for _, f := range []func() error{
		lw.OutputLogFormatVersion,
		func() error { return lw.OutputComment("[Logged with netperfkit latency, values in nanoseconds]") },
		func() error { return lw.OutputStartTime(ms) },
		func() error { return lw.OutputBaseTime(ms) },
		lw.OutputLegend,
	} {
		if err := f(); err != nil {
			return err
		}
	}
	lw.SetBaseTime(ms)
	c := h.Clone()
	c.SetStartTimeMs(ms)
	c.SetEndTimeMs(to.UnixMilli())
	return lw.OutputIntervalHistogram(c)
}

// writeText prints res, the result of a run of cfg, in sockperf's style;
// local says that addr is the in-process server started by startLocal.
func writeText(w io.Writer, addr string, local bool, cfg *latency.PingPongConfig, res *latency.PingPongResult) error {
	kind := "ping-pong"
	size := max(cfg.MessageSize, 14) // the header's 14 bytes when unset
	if cfg.MPS > 0 {
		kind = fmt.Sprintf("under-load (%d msg/s, reply every %d)", cfg.MPS, cmp.Or(cfg.ReplyEvery, 100))
	}
	where := addr
	if local {
		where += " (in-process server)"
	}
	mode := "default"
	if cfg.Spin > 0 {
		mode = "spin"
	}
	fmt.Fprintf(w, "sockperf: %s over %s to %s, %d-byte messages, %s mode\n", kind, res.Network, where, size, mode)
	fmt.Fprintf(w, "sockperf: [Total Run] RunTime=%.3f sec; SentMessages=%d; ReceivedMessages=%d; rate=%.0f msg/s\n",
		res.RunTime.Seconds(), res.Sent, res.Received, res.AchievedMPS)
	fmt.Fprintf(w, "sockperf: [Valid Duration] RunTime=%.3f sec; Observations=%d\n", res.ValidTime.Seconds(), res.Observations)
	if res.CPU > 0 && res.RunTime > 0 {
		fmt.Fprintf(w, "sockperf: the client's own threads used %.3f s of CPU, %.1f%% of a core\n",
			res.CPU.Seconds(), 100*res.CPU.Seconds()/res.RunTime.Seconds())
	}
	if cfg.MPS > 0 {
		fmt.Fprintf(w, "sockperf: %d messages sent late (over one interval, at most 1 ms, after their intended time)\n", res.Late)
		fmt.Fprintln(w, "sockperf: round-trip times from each message's intended send time, less the sender's own lateness, to the reply's arrival in the kernel:")
	}
	writeKernelView(w, res)
	if err := res.Summary.WriteText(w, "Round trip"); err != nil {
		return err
	}
	if res.Raw != nil {
		fmt.Fprintln(w, "sockperf: raw send-to-reply round-trip times:")
		if err := res.Raw.WriteText(w, "Round trip"); err != nil {
			return err
		}
	}
	writeClientShare(w, res, cfg.MPS > 0)
	return nil
}

// writeKernelView prints the kernel-to-kernel round trip, which measures
// the path (and the server) without the client's scheduling, so it leads;
// or why there is none. The application's view follows in sockperf's form.
func writeKernelView(w io.Writer, res *latency.PingPongResult) {
	k := res.KernelRTT
	if k == nil {
		fmt.Fprintf(w, "sockperf: no kernel stamps: %s; round trips below are the application's view\n", res.NoKernelStamps)
		return
	}
	fmt.Fprintf(w, "sockperf: kernel-to-kernel round trip (request's transmit stamp to reply's receive stamp): p50 %.3f p99 %.3f p99.9 %.3f max %.3f usec, %d observations, %d without stamps\n",
		usec(k.P50), usec(k.P99), usec(k.P999), usec(k.Max), k.Observations, res.KernelStampsLost)
	fmt.Fprintln(w, "sockperf: application view (our send call to our read of the reply):")
}

// writeClientShare prints the client's own share of the measured round
// trips, and says when it is a large part of them.
func writeClientShare(w io.Writer, res *latency.PingPongResult, underLoad bool) {
	var sendP99, wakeP50, wakeP99 time.Duration
	if res.SendLateness != nil {
		sendP99 = res.SendLateness.P99
	}
	if res.ReceiveWake != nil {
		wakeP50, wakeP99 = res.ReceiveWake.P50, res.ReceiveWake.P99
	}
	if res.SendLateness == nil && res.ReceiveWake == nil {
		return
	}
	// Under load the round trips end at the reply's kernel receive
	// stamp, so the wake-up is outside them too.
	where, inside := "inside them", wakeP99
	if underLoad {
		where, inside = "kept out too: they end at the reply's kernel stamp", 0
	}
	fmt.Fprintf(w, "sockperf: client's own share: send lateness p99 %.3f usec (kept out of the round trips); receive wake-up p50 %.3f p99 %.3f usec (%s)\n",
		usec(sendP99), usec(wakeP50), usec(wakeP99), where)
	if res.P99 > 0 && 4*(sendP99+inside) >= res.P99 {
		fmt.Fprintln(w, "sockperf: NOTE: the client's own share is a large part of the p99 above: on a busy machine the figure is partly the client's")
	}
}

func usec(d time.Duration) float64 { return float64(d) / 1e3 }

// searchSLO runs the SLO rate search and prints its steps.
func searchSLO(ctx context.Context, stdout, stderr io.Writer, o options, cfg *latency.PingPongConfig) error {
	res, err := slo.PingPong(ctx, o.addr, cfg, &slo.Config{SLO: *o.slo, Start: o.start, StepDuration: o.step,
		OnStep: func(st slo.Step) {
			fmt.Fprintf(stderr, "pingpong: %s %.0f msg/s (achieved %.0f): p%g %.1f us of %d (client's share p99 %.1f us), %d dropped, %s\n",
				st.Phase, st.Rate, st.AchievedRate, o.slo.Percentile, float64(st.Percentile)/1e3, st.Requests, usec(st.ClientShare), st.Failed, st.Verdict())
		}})
	if err != nil && len(res.Steps) == 0 {
		return err
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Fprintf(stdout, "SLO %s on %s over %s, steps of %v, every message asks for a reply\n", res.SLO, o.addr, cfg.Network, o.step)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tphase\tmsg/s\tachieved/s\tpercentile us\tmeasured\tdropped\tclient p99 us\tSLO\t")
	for i, st := range res.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.1f\t%d\t%d\t%.1f\t%s\t\n", i+1, st.Phase, st.Rate, st.AchievedRate, float64(st.Percentile)/1e3, st.Requests, st.Failed,
			usec(st.ClientShare), st.Verdict())
	}
	tw.Flush()
	broke := "never, up to the maximum rate"
	if res.BrokeAt > 0 {
		broke = fmt.Sprintf("%.0f msg/s", res.BrokeAt)
	}
	fmt.Fprintf(stdout, "highest rate meeting %s: %.0f msg/s; broke at %s\n", res.SLO, res.Rate, broke)
	if n := len(res.Steps); n > 0 && res.Steps[n-1].Unjudged {
		fmt.Fprintf(stdout, "the search ended at %.0f msg/s: even a step ten times as long holds too few replies to judge %s there\n", res.Steps[n-1].Rate, res.SLO)
	}
	return err
}
