// Command cachebench runs field experiment E3's workload against a Valkey or
// Redis endpoint: GET/SET with a number of workers for a duration, in pool mode
// (each worker reuses one client) and connect mode (a new client per
// operation), repeated, reporting per engine and mode the median over runs of
// p50, p99 and ops/s with min-max ranges, and attempts and errors summed.
//
// Usage:
//
//	cachebench [connection flags as cacheprobe] [-engine glide|resp|both]
//	           [-mode pool|connect|both] [-workers 4] [-d 20s] [-runs 3]
//	           [-ratio 1:1] [-rate N [-arrival uniform|poisson] [-kernel=false]] [-json]
//	cachebench [connection flags] -slo p99=1ms [-start 1000] [-step 1s] ...
//
// With -slo the tool searches, per engine and mode, for the highest
// open-loop rate whose response-time percentile meets the objective: steps
// of -step at rates doubling from -start until one breaks it, then a
// bisection. It prints every step (rate, achieved rate, the percentile,
// met or not), the rate found and the rate where it broke.
//
// With -rate N the runs are open-loop: N operations per second across all
// workers start on schedule whether or not earlier ones have finished
// (-workers then bounds how many are in flight; unset or 0 picks enough
// for 5 ms per operation: rate/200, at least 4). Latencies are response times from each operation's intended
// start, free of coordinated omission; the table adds the achieved rate,
// the late and unstarted operations and the service-time p99. Pooled resp
// runs also print the kernel-to-kernel view (each request's transmit stamp
// to its reply's receive stamp, both the kernel's), taken on a sample of
// the requests (at least 1,000 a run, all of a run under 2,000; the
// "stamped" column says how many): only the sampled requests pay for
// their stamps, so the application view costs what it costs without the
// view, and -kernel=false leaves it out altogether.
//
// On Ctrl-C (SIGINT) or SIGTERM the tool stops within about 100 ms, prints
// the results it has, the interrupted run or search included, marked as
// partial ("interrupted": true in JSON, a note above the tables), and exits
// with status 128 + the signal's number, as a shell reports a command that
// signal ended: 130 after SIGINT, 143 after SIGTERM.
//
// Sharded over several processes or hosts (README.md, "Load from several
// hosts"): -shard I/N runs shard I of N, with its own part of the key space
// (its own key prefix over 10,000/N keys) and its own -workers connections;
// -start-at TIME (RFC 3339) starts every shard at one wall-clock time and
// refuses a time already past (exit status 3); -out FILE (- for stdout)
// writes the shard's result with per-interval HDR histograms (-interval,
// 1s) for
//
//	cachebench merge [-json] FILE|DIR...
//
// which merges them over the intervals every shard measured whole
// (package latency/shard), names missing and failed shards (exit status 1)
// and flags saturated generators. A sharded run is one run of one engine
// and mode (pool unless -mode says otherwise).
//
// With -engine both, each mode also reports glide relative to resp on the same
// endpoint: the client library's own overhead. Without -addr a local server
// is started. The glide engine needs cgo: in a binary built without it,
// -engine glide warns "glide engine not built in (needs cgo)" and runs resp.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/examples/internal/localcache"
	"github.com/netperfkit/netperfkit/internal/gomaxprocs"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/slo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitInterrupted is the exit status of a run stopped without a signal
// (runCtx's ctx cancelled): that of Ctrl-C, 128 + SIGINT.
const exitInterrupted = 130

type output struct {
	Endpoint    string              `json:"endpoint"`
	Workers     int                 `json:"workers"`
	DurationSec float64             `json:"duration_sec"`
	Runs        int                 `json:"runs"`
	Ratio       string              `json:"ratio"`
	Rate        float64             `json:"rate,omitempty"`
	Arrival     string              `json:"arrival,omitempty"`
	Results     []*row              `json:"results,omitempty"`
	Searches    []*search           `json:"searches,omitempty"`
	Comparisons []median.Comparison `json:"comparisons,omitempty"`
	// Interrupted marks partial results: the tool was stopped (Ctrl-C,
	// SIGTERM) and the last run or search is cut short.
	Interrupted bool `json:"interrupted,omitempty"`
}

// options is the parsed command line.
type options struct {
	ef       *cachecli.EndpointFlags
	engines  []cache.Engine
	modes    []cache.ConnMode
	workers  int
	dur      time.Duration
	ops      int64 // -n: operations per run, 0 for -d alone
	runs     int
	ratio    string
	get, set int
	rate     float64
	arrival  latency.Arrival
	slo      *slo.SLO
	start    float64
	step     time.Duration
	asJSON   bool
	kernel   bool
	// procs is -procs: 0 sets GOMAXPROCS per run from cache.Procs (unless
	// the environment sets GOMAXPROCS), a positive value sets it for
	// every run, -1 leaves Go's default.
	procs int
	sh    *shardFlags // -shard, -start-at, -out: shard.go
}

// errFlags reports that the flag package has already printed what was wrong
// with the command line.
var errFlags = errors.New("bad flags")

func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("cachebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{ef: cachecli.NewEndpointFlags(fs, "")}
	engineFlag := fs.String("engine", "glide", "client engine: glide, resp or both (glide needs a cgo build)")
	modeFlag := fs.String("mode", "both", "pool, connect or both")
	fs.IntVar(&o.workers, "workers", 4, "concurrent workers (with -rate: operations in flight at most, 0 = enough for 5 ms each)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: start `N` operations per second across all workers (0: closed loop)")
	arrival := fs.String("arrival", "uniform", "open-loop spacing: uniform or poisson")
	sloFlag := fs.String("slo", "", "search for the highest rate meeting `pP=D`, e.g. p99=1ms")
	fs.Float64Var(&o.start, "start", 1000, "-slo: first rate of the search, ops/s")
	fs.DurationVar(&o.step, "step", time.Second, "-slo: duration of each step")
	fs.DurationVar(&o.dur, "d", 20*time.Second, "duration of each run")
	fs.Int64Var(&o.ops, "n", 0, "operations per run, as redis-benchmark's -n: a run ends at the first of `N` and -d (0: -d alone)")
	fs.IntVar(&o.runs, "runs", 3, "runs per engine and mode (medians are reported)")
	fs.StringVar(&o.ratio, "ratio", "1:1", "GET:SET ratio")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	fs.IntVar(&o.procs, "procs", 0, "GOMAXPROCS for each run: 0 = one per 4 workers for closed-loop connect-per-op runs of the resp engine (cache.Procs) and Go's default otherwise, unless GOMAXPROCS is set; -1 = Go's default always")
	fs.BoolVar(&o.kernel, "kernel", true, "open-loop pooled resp runs: take the kernel-to-kernel view too, on a sample of the requests (at least 1,000 a run), whose stamps cost the others nothing")
	o.sh = addShardFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, errFlags
	}
	o.sh.visited(fs)
	names, err := choices(*engineFlag, "both", cachecli.Glide, cachecli.Resp)
	if err != nil {
		return nil, fmt.Errorf("-engine: %w", err)
	}
	if o.engines, err = cachecli.Engines(names, prefixed{stderr}); err != nil {
		return nil, fmt.Errorf("-engine: %w", err)
	}
	modes, err := choices(*modeFlag, "both", string(cache.Pooled), string(cache.ConnectPerOp))
	if err != nil {
		return nil, fmt.Errorf("-mode: %w", err)
	}
	for _, m := range modes {
		o.modes = append(o.modes, cache.ConnMode(m))
	}
	if o.get, o.set, err = cachecli.ParseRatio(o.ratio); err != nil {
		return nil, err
	}
	if o.arrival, err = latency.ParseArrival(*arrival); err != nil {
		return nil, fmt.Errorf("-arrival: %w", err)
	}
	workersSet := false
	fs.Visit(func(f *flag.Flag) { workersSet = workersSet || f.Name == "workers" })
	if (o.rate > 0 || *sloFlag != "") && !workersSet {
		o.workers = 0 // open loop: enough in flight for the rate
	}
	if *sloFlag != "" {
		objective, err := slo.Parse(*sloFlag)
		if err != nil {
			return nil, fmt.Errorf("-slo: %w", err)
		}
		o.slo = &objective
	}
	if o.rate < 0 {
		return nil, fmt.Errorf("-rate %v is negative", o.rate)
	}
	if o.ops < 0 {
		return nil, fmt.Errorf("-n %d is negative", o.ops)
	}
	if o.ops > 0 && (o.slo != nil || o.sh.active()) {
		return nil, errors.New("-n sizes the runs of a comparison; -slo steps and -shard runs are sized by their duration")
	}
	if o.procs < -1 {
		return nil, fmt.Errorf("-procs %d: want -1, 0 or a positive count", o.procs)
	}
	return o, nil
}

// prefixed writes warnings with the tool's name in front.
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.w, "cachebench: %s", b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func choices(v, both string, all ...string) ([]string, error) {
	if v == both {
		return all, nil
	}
	if slices.Contains(all, v) {
		return []string{v}, nil
	}
	return nil, fmt.Errorf("%q is not one of %v or %q", v, all, both)
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := notifyStop(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCtx(ctx, args, stdout, stderr)
}

// stopSignal is the cause of the run's context when a signal stopped it.
type stopSignal struct{ sig syscall.Signal }

func (s stopSignal) Error() string { return "cachebench: stopped by " + s.sig.String() }

// notifyStop returns a context that the first of sigs to arrive cancels,
// with a stopSignal cause, and the function that stops listening. Until
// then, later signals are caught too: the tool ends on its own, with its
// partial results, rather than being killed while it writes them.
func notifyStop(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case s := <-ch:
			sig, ok := s.(syscall.Signal)
			if !ok {
				sig = syscall.SIGINT
			}
			cancel(stopSignal{sig})
		case <-done:
		}
	})
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// stoppedStatus is the exit status of a run stopped before its end: 128 +
// the number of the signal that stopped it, as shells report it, or
// exitInterrupted when ctx ended without a signal.
func stoppedStatus(ctx context.Context) int {
	var s stopSignal
	if errors.As(context.Cause(ctx), &s) {
		return 128 + int(s.sig)
	}
	return exitInterrupted
}

// runCtx is run until ctx ends, which Ctrl-C and SIGTERM do.
func runCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "cachebench:", err)
		return code
	}
	if len(args) > 0 && args[0] == "merge" {
		return runMerge(args[1:], stdout, stderr)
	}
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, errFlags) {
			return 2
		}
		return fail(2, err)
	}
	ep, err := o.ef.Endpoint()
	if err != nil {
		return fail(2, err)
	}
	if ep.Addr == "" {
		srv, err := localcache.Start(ctx, o.ef, ep)
		if err != nil {
			return fail(2, err)
		}
		defer srv.Close()
		fmt.Fprintf(stderr, "cachebench: started local %s on %s\n", srv.Binary, srv.Addr)
	}
	if o.sh.active() {
		return runShard(ctx, ep, o, stdout, stderr)
	}
	benchFn := bench
	if o.slo != nil {
		benchFn = searchAll
	}
	out, err := benchFn(ctx, ep, o, stderr)
	if err != nil && (out == nil || !out.Interrupted) {
		return fail(1, err)
	}
	if out.Interrupted {
		fmt.Fprintf(stderr, "cachebench: interrupted (%v): the results below are partial\n", err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(1, err)
		}
	} else {
		printTables(stdout, out)
	}
	printErrors(stderr, out)
	if out.Interrupted {
		return stoppedStatus(ctx)
	}
	return 0
}

// bench runs every engine and mode and compares them.
func bench(ctx context.Context, ep *cache.Endpoint, o *options, stderr io.Writer) (*output, error) {
	out := &output{Endpoint: ep.String(), Workers: o.workers, DurationSec: o.dur.Seconds(), Runs: o.runs, Ratio: o.ratio, Rate: o.rate}
	if o.rate > 0 {
		out.Arrival = o.arrival.String()
	}
	byKey := map[string]*median.Result{}
	key := func(engine string, mode cache.ConnMode) string { return engine + "/" + string(mode) }
	for _, mode := range o.modes {
		for _, engine := range o.engines {
			cfg := &cache.WorkloadConfig{
				Engine: engine, Mode: mode, Workers: o.workers, Duration: o.dur, MaxOps: o.ops,
				GetWeight: o.get, SetWeight: o.set, Rate: o.rate, Arrival: o.arrival, NoKernelView: !o.kernel,
			}
			restore := gomaxprocs.Set(cachecli.Procs(o.procs, cfg))
			procs := runtime.GOMAXPROCS(0)
			agg, err := median.Run(ctx, ep, &median.Config{Workload: cfg, Runs: o.runs,
				OnRun: func(r cache.RunResult) {
					waited := ""
					if len(r.Causes.Connects) > 0 {
						waited = ", waited on: " + cachecli.CausesText(r.Causes)
					}
					fmt.Fprintf(stderr, "cachebench: %s %s: %.0f ops/s, p50 %.0f us, p99 %.0f us, %d attempts, %d errors%s\n",
						r.Engine, r.Mode, r.OpsPerSec, float64(r.Latency.P50)/1e3, float64(r.Latency.P99)/1e3, r.Attempts, r.Errors, waited)
				},
			})
			restore()
			if err != nil {
				err = fmt.Errorf("%s %s: %w", cachecli.Name(engine), mode, err)
				if ctx.Err() == nil {
					return nil, err
				}
				// Stopped: keep the runs so far, the cut one included.
				if agg != nil {
					out.Results = append(out.Results, newRow(agg, procs))
				}
				out.Interrupted = true
				return out, err
			}
			out.Results = append(out.Results, newRow(agg, procs))
			byKey[key(agg.Engine, mode)] = agg
		}
		if g, r := byKey[key(cachecli.Glide, mode)], byKey[key(cachecli.Resp, mode)]; g != nil && r != nil {
			out.Comparisons = append(out.Comparisons, median.Compare("resp "+string(mode), r, "glide "+string(mode), g))
		}
	}
	for _, engine := range o.engines {
		name := cachecli.Name(engine)
		if p, c := byKey[key(name, cache.Pooled)], byKey[key(name, cache.ConnectPerOp)]; p != nil && c != nil {
			out.Comparisons = append(out.Comparisons, median.Compare(name+" pool", p, name+" connect", c))
		}
	}
	return out, nil
}

func printErrors(stderr io.Writer, out *output) {
	for _, a := range out.Results {
		if a.Errors > 0 {
			kinds := make([]string, 0, len(a.ErrorsByKind))
			for k, n := range a.ErrorsByKind {
				kinds = append(kinds, fmt.Sprintf("%s=%d", string(k), n)) // k's Error() would add "cache: "
			}
			sort.Strings(kinds)
			fmt.Fprintf(stderr, "cachebench: %s %s errors: %v\n", a.Engine, a.Mode, kinds)
		}
	}
}

func printTables(w io.Writer, o *output) {
	if o.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: partial results, the last run or search was cut short")
	}
	if len(o.Searches) > 0 {
		printSearches(w, o)
		return
	}
	workers := fmt.Sprint(o.Workers)
	if o.Workers == 0 {
		workers = "auto"
	}
	fmt.Fprintf(w, "endpoint %s, %s workers, %s per run, %d runs, GET:SET %s\n",
		o.Endpoint, workers, time.Duration(o.DurationSec*float64(time.Second)), o.Runs, o.Ratio)
	if o.Rate > 0 {
		fmt.Fprintf(w, "open loop at %.0f ops/s (%s): p50 and p99 are response times from each operation's intended start\n", o.Rate, o.Arrival)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tmode\tp50 us\t(min-max)\tp99 us\t(min-max)\tops/s\t(min-max)\tattempts\terrors\t")
	for _, a := range o.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t(%.0f-%.0f)\t%.0f\t(%.0f-%.0f)\t%.0f\t(%.0f-%.0f)\t%d\t%d\t\n",
			a.Engine, a.Mode, us(a.P50.Median), us(a.P50.Min), us(a.P50.Max), us(a.P99.Median), us(a.P99.Min), us(a.P99.Max),
			a.OpsPerSec.Median, a.OpsPerSec.Min, a.OpsPerSec.Max, a.Attempts, a.Errors)
	}
	tw.Flush()
	for _, a := range o.Results {
		if a.Procs > 0 && a.Procs < runtime.NumCPU() {
			fmt.Fprintf(w, "%s %s ran on GOMAXPROCS %d of %d CPUs (-procs: one P per 4 connect-per-op workers, which wait on the kernel; -procs -1 for Go's default)\n",
				a.Engine, a.Mode, a.Procs, runtime.NumCPU())
		}
	}
	printCauses(w, o)
	printKernel(w, o)
	printDebris(w, o)
	if o.Rate > 0 {
		printOpen(w, o)
	}
	if len(o.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "other vs base\tp50 ratio\tp99 ratio\tops/s ratio\t")
	for _, c := range o.Comparisons {
		fmt.Fprintf(tw, "%s vs %s\t%.2fx\t%.2fx\t%.2fx\t\n", c.Other, c.Base, c.P50Ratio, c.P99Ratio, c.OpsPerSecRatio)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n(glide vs resp on the same endpoint and mode is the client library's own overhead)")
}

// printOpen prints the schedule of open-loop runs.
func printOpen(w io.Writer, o *output) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tmode\ttarget/s\tachieved/s\t(min-max)\tlate\tunstarted\tbehind own late sends\tservice p99 us\t(min-max)\tclient: send late p99 us\treceive wake p99 us\t")
	var notes []string
	for _, a := range o.Results {
		if a.AchievedRate == nil || a.ServiceP99 == nil {
			continue
		}
		var cl, wake time.Duration
		if a.ClientLatenessP99 != nil && a.ReceiveWakeP99 != nil {
			cl, wake = a.ClientLatenessP99.Median, a.ReceiveWakeP99.Median
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t(%.0f-%.0f)\t%d\t%d\t%d\t%.0f\t(%.0f-%.0f)\t%.0f\t%.0f\t\n", a.Engine, a.Mode, a.TargetRate,
			a.AchievedRate.Median, a.AchievedRate.Min, a.AchievedRate.Max, a.Late, a.Unstarted, a.Reclassified,
			us(a.ServiceP99.Median), us(a.ServiceP99.Min), us(a.ServiceP99.Max), us(cl), us(wake))
		if n := clientShareNote(a.Engine+" "+string(a.Mode), a.P99.Median, cl, wake); n != "" {
			notes = append(notes, n)
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// clientShareNote says when the client's own share (its send lateness,
// kept out of the response times, and its receive wake-up, inside them) is
// a large part of a p99 of p99: then the figure is partly the client's.
func clientShareNote(what string, p99, sendLate, wake time.Duration) string {
	if p99 <= 0 || 4*(sendLate+wake) < p99 {
		return ""
	}
	return fmt.Sprintf("NOTE %s: the client's own share is a large part of p99 %.0f us (send lateness p99 %.0f us, kept out of it; receive wake-up p99 %.0f us, inside it): on a busy machine the figure is partly the client's",
		what, us(p99), us(sendLate), us(wake))
}

// us is d in microseconds, the unit the tables print.
func us(d time.Duration) float64 { return float64(d) / 1e3 }
