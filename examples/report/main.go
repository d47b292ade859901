// Command report runs netperfkit's three field experiments in one go and
// prints them as the field reports do:
//
//   - E1 paths: per target, 1-flow and N-stream TCP throughput, UDP ping-pong
//     RTT percentiles, and the ENA/SRD counter deltas of an interface;
//   - E2 matrix: TCP upload/download with 1 and N streams and UDP at target
//     rates, judged against a stated limit, flagging generator-limited rows;
//   - E3 cache: connection-phase medians per endpoint, pooled vs
//     connect-per-operation workloads, and on the local clusters what their
//     nodes see of a connect-per-op operation and a failover drill.
//
// With no flags it starts netperfkit's iperf3-compatible and sockperf-
// compatible servers on loopback, and for E3 a plain and a TLS+ACL cluster
// of the field's shape, three primaries with a replica each (valkey-server
// and redis-server through cachetest when installed, else an in-process
// miniredis that shows the method, not a cache's performance), and measures
// them with short durations. Flags point each part
// at real targets:
//
//	report -paths same=10.0.0.5,cross=10.1.0.7 -matrix 10.0.0.5 -limit 5G \
//	       -cache my-cache.example:6379 -cache-tls -d 15s -out results
//
// -out DIR writes report.json, percentile-spectrum and throughput plots (SVG
// and PNG), and the report ready to publish: report.md (GitHub-flavoured
// Markdown) and report.html (one self-contained page).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/runinfo"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
	"github.com/netperfkit/netperfkit/throughput"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Report is what report.json holds.
type Report struct {
	// Metadata says where and how the report ran (runinfo.Collect).
	Metadata        *runinfo.Metadata `json:"metadata"`
	StartedAt       time.Time         `json:"started_at"`
	DurationSeconds float64           `json:"duration_seconds"`
	// Interrupted is set when Ctrl-C (or a failure) stopped the run: the
	// sections hold what finished, and the ones that did not start are null.
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is what stopped the run, when something did.
	Error  string         `json:"error,omitempty"`
	Paths  *PathsSection  `json:"paths"`
	Matrix *MatrixSection `json:"matrix"`
	Cache  *CacheSection  `json:"cache"`
	// Command holds the flags given on the command line (-name=value; a
	// password as its environment variable), to reproduce the run.
	Command []string `json:"command,omitempty"`
	// Plots lists the files written next to report.json.
	Plots []string `json:"plots,omitempty"`
	// PlotErrors says which plots could not be drawn, and why.
	PlotErrors []string `json:"plot_errors,omitempty"`
}

type options struct {
	paths, matrix, iface, skip, out string
	tport, lport                    int
	limit, rates                    string
	d, rttD, cacheD, interval       time.Duration
	rttMode                         string
	rttLoad                         string // -rtt-load: on or off
	rttLoadMPS                      int    // -rtt-load-mps
	streams, mstreams, runs, probes int
	workers                         int
	engines                         string
	glideLog                        string
	jsonOut                         bool
	progress                        string
	cache                           *cachecli.EndpointFlags // -cache and the -cache-* flags
	cacheConfig, cacheCompare       string
	cacheFailover                   bool
	cacheServers                    string
	imds                            string
	compare                         bool
	label                           string
	compareFiles                    []string
	imdsTimeout                     time.Duration
	settings                        map[string]string // every flag and its value, for the metadata
	command                         []string          // the flags given, for Report.Command

	// snapshot, when set, replaces ethtool.ReadSnapshot as the source of
	// E1's counter snapshots (tests feed saved ENA snapshots through it).
	snapshot func(iface string) (*ethtool.Snapshot, error)
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.paths, "paths", "", "E1 targets as name=host[@limit],... each running an iperf3 server on -tport and a sockperf server on -lport; @limit (5G, 10G, 25G) judges the 1-flow result against that single-flow reference (default: in-process servers on loopback)")
	fs.StringVar(&o.rttMode, "rtt-mode", defaultRTTMode(), "E1 ping-pong receive path: spin (busy-polls one core, close to sockperf; the default with 2 or more CPUs on linux) or poll (Go's netpoller, reads about 10% above sockperf at p50)")
	fs.DurationVar(&o.interval, "i", time.Second, "E2 interval of each row's throughput series (report.json and the throughput-over-time plot)")
	fs.IntVar(&o.tport, "tport", 5201, "iperf3 server port of the -paths and -matrix targets") // iperf3's default port
	fs.IntVar(&o.lport, "lport", 11111, "sockperf server (UDP) port of the -paths targets")
	fs.StringVar(&o.matrix, "matrix", "", "E2 target host[:port] running an iperf3 server (default: in-process server on loopback)")
	fs.StringVar(&o.iface, "iface", "", "interface whose ENA/SRD counters E1 reads (default: the interface of the default route)")
	fs.StringVar(&o.limit, "limit", "5G", "the limit E2 judges results against, bits/s with a K, M, G or T suffix (for example the instance's 5G burst)")
	fs.StringVar(&o.rates, "rates", "1G,5G", "E2 UDP target rates")
	fs.DurationVar(&o.d, "d", 2*time.Second, "duration of each throughput run (the field studies used 15-30s)")
	fs.DurationVar(&o.rttD, "rtt-d", 2*time.Second, "duration of each UDP ping-pong RTT run")
	fs.StringVar(&o.rttLoad, "rtt-load", "on", "E1 RTT under load: on measures each path's RTT a second time while its -streams flow runs (one more -rtt-d per path), beside the idle RTT; off keeps the idle RTT only")
	fs.IntVar(&o.rttLoadMPS, "rtt-load-mps", defaultLoadedMPS, "E1 RTT under load: probe messages per second, each answered and timed from its intended send time (sockperf under-load with every reply); 1000 gives p99.9 from a 2 s run")
	fs.DurationVar(&o.cacheD, "cache-d", 2*time.Second, "duration of each cache workload run (the field study used 20s)")
	fs.IntVar(&o.streams, "streams", 8, "E1 parallel TCP streams")
	fs.IntVar(&o.mstreams, "mstreams", 4, "E2 parallel TCP streams")
	fs.IntVar(&o.runs, "runs", defaultRuns, "E3 runs per workload: the table shows their median and range, and the ratios compare them with the Mann-Whitney U test, which needs 4 runs a side to show a change at p < 0.05 (with 3 it never can)")
	fs.IntVar(&o.probes, "probes", 200, "E3 connection probes per endpoint configuration")
	fs.IntVar(&o.workers, "workers", 4, "E3 parallel workers")
	fs.StringVar(&o.engines, "engines", "glide,resp", "E3 workload engines; the first fills the modes table (glide needs a cgo build: without it, resp runs)")
	fs.StringVar(&o.glideLog, "glide-log", "", "E3: "+cachecli.GlideLogUsage)
	o.cache = cachecli.NewEndpointFlags(fs, "cache")
	fs.StringVar(&o.cacheConfig, "cache-config", "", "JSON or YAML file with per-endpoint settings (label, addr, tls, cluster, cacert, insecure, server_name, user, password_env, iam: {cache, region, serverless}, connect_timeout, request_timeout); -cache LABEL,... picks from it")
	fs.StringVar(&o.cacheCompare, "cache-compare", "", "E3 endpoint ratios as BASE/OTHER label pairs, for example SV2/SP1,N1/N2 (default: every endpoint against the first)")
	fs.BoolVar(&o.cacheFailover, "cache-failover", true, "E3: run the failover drill on the local plain cluster (one primary SIGSTOPped in a pooled and a connect-per-op run per engine, about 7 s each); needs the local clusters, not -cache")
	fs.StringVar(&o.cacheServers, "cache-servers", "first", "E3 without -cache: first runs the clusters of one installed server (valkey-server, else redis-server), all those of each (twice E3's time)")
	fs.StringVar(&o.skip, "skip", "", "parts to skip: any of paths,matrix,cache")
	fs.StringVar(&o.out, "out", "", "directory for report.json, the plots, report.md and report.html")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON instead of tables")
	fs.StringVar(&o.progress, "progress", "auto", "live progress on stderr: auto (when a terminal), on, off")
	fs.StringVar(&o.imds, "imds", "", "EC2 instance metadata endpoint for the metadata block (default: the SDK's, 169.254.169.254); off skips it")
	fs.DurationVar(&o.imdsTimeout, "imds-timeout", time.Second, "how long to wait for the EC2 instance metadata service; without an answer the metadata says \"unknown\", or \"not on EC2\" when the firmware (DMI) shows other hardware")
	fs.BoolVar(&o.compare, "compare", false, "compare two reports instead of running one: report -compare OLD.json NEW.json (with -json, -label)")
	fs.StringVar(&o.label, "label", "", "with -compare: names of the two runs, OLD,NEW (default: the file names)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.compare {
		// Flags may follow the file names: -compare A.json B.json -json.
		for rest := fs.Args(); len(rest) > 0; {
			if strings.HasPrefix(rest[0], "-") {
				if err := fs.Parse(rest); err != nil {
					return nil, err
				}
				rest = fs.Args()
				continue
			}
			o.compareFiles = append(o.compareFiles, rest[0])
			rest = rest[1:]
		}
		return o, nil
	}
	o.command = commandArgs(fs)
	o.settings = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Name, "password") && !strings.Contains(f.Name, "pass") {
			o.settings[f.Name] = f.Value.String()
		}
	})
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// check validates the flags a run uses.
func (o *options) check() error {
	for _, s := range splitList(o.skip) {
		if s != "paths" && s != "matrix" && s != "cache" {
			return fmt.Errorf("-skip: unknown part %q (want paths, matrix or cache)", s)
		}
	}
	switch {
	case o.d <= 0 || o.rttD <= 0 || o.cacheD <= 0:
		return errors.New("-d, -rtt-d and -cache-d must be positive")
	case o.runs < 1:
		return fmt.Errorf("-runs: %d is not a positive number of runs", o.runs)
	case o.interval < 100*time.Millisecond:
		return errors.New("-i must be at least 100ms")
	case o.rttMode != "spin" && o.rttMode != "poll":
		return fmt.Errorf("-rtt-mode: %q is not spin or poll", o.rttMode)
	case o.rttLoad != "on" && o.rttLoad != "off":
		return fmt.Errorf("-rtt-load: %q is not on or off", o.rttLoad)
	case o.rttLoadMPS < 1:
		return fmt.Errorf("-rtt-load-mps: %d is not a positive rate", o.rttLoadMPS)
	case o.cacheServers != "first" && o.cacheServers != "all":
		return fmt.Errorf("-cache-servers: %q is not first or all", o.cacheServers)
	}
	return nil
}

func (o *options) skipped(part string) bool {
	for _, s := range splitList(o.skip) {
		if s == part {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "report:", err)
		return 2
	}
	if o.compare {
		if err := runCompare(o.compareFiles, o.label, o.jsonOut, stdout); err != nil {
			fmt.Fprintln(stderr, "report:", err)
			return 1
		}
		return 0
	}
	if err := checkCacheCompare(o); err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return 2
	}
	return execute(ctx, o, stdout, stderr)
}

// execute runs the report that o describes, prints it and writes -out.
func execute(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	rep, runErr := runReport(ctx, o, stderr)
	if rep == nil {
		fmt.Fprintln(stderr, "report:", runErr)
		return 1
	}
	code := 0
	if runErr != nil {
		// What finished is still printed and written below.
		rep.Error = runErr.Error()
		rep.Interrupted = true
		fmt.Fprintln(stderr, "report:", runErr)
		code = 1
		if ctx.Err() != nil {
			code = 130 // as a shell reports SIGINT
		}
	}
	if o.out != "" {
		if err := writeOut(o.out, rep, stderr); err != nil {
			fmt.Fprintln(stderr, "report:", err)
			code = max(code, 1)
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "report:", err)
			return max(code, 1)
		}
		return code
	}
	if err := writeText(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "report:", err)
		return max(code, 1)
	}
	if o.out != "" {
		fmt.Fprintf(stdout, "wrote %s\n", strings.Join(append([]string{filepath.Join(o.out, "report.json"), "report.md", "report.html"}, rep.Plots...), ", "))
	}
	return code
}

func runReport(ctx context.Context, o *options, stderr io.Writer) (*Report, error) {
	limit, err := parseRate(o.limit)
	if err != nil {
		return nil, fmt.Errorf("-limit: %w", err)
	}
	var rates []float64
	for _, r := range splitList(o.rates) {
		v, err := parseRate(r)
		if err != nil {
			return nil, fmt.Errorf("-rates: %w", err)
		}
		rates = append(rates, v)
	}
	var engines []cache.Engine
	if !o.skipped("cache") {
		engines, err = cachecli.Engines(splitList(o.engines), warnWriter{stderr})
		if err != nil {
			return nil, fmt.Errorf("-engines: %w", err)
		}
	}
	if len(engines) == 0 && !o.skipped("cache") {
		return nil, errors.New("-engines: name at least one engine")
	}
	if !o.skipped("cache") {
		stopLog, err := cachecli.GlideLog(o.glideLog, stderr)
		if err != nil {
			return nil, fmt.Errorf("-glide-log: %w", err)
		}
		defer stopLog()
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := startServers(ctx, o)
	if err != nil {
		return nil, err
	}
	defer srv.close()

	targets, pathLimits, err := pathTargets(o, srv)
	if err != nil {
		return nil, err
	}
	matrixAddr := srv.throughputAddr
	if o.matrix != "" {
		matrixAddr = withDefaultPort(o.matrix, o.tport)
	}
	scs := matrixScenarios(o.mstreams, rates)
	copts := cacheOptions{Probes: o.probes, Duration: o.cacheD, Runs: o.runs, Workers: o.workers, Engines: engines, Failover: o.cacheFailover}
	if copts.Compare, err = cacheComparePairs(o.cacheCompare); err != nil {
		return nil, err
	}

	var planned time.Duration
	if !o.skipped("paths") {
		planned += time.Duration(len(targets)) * (2*o.d + o.rttD)
		if o.rttLoad == "on" {
			planned += time.Duration(len(targets)) * o.rttD
		}
	}
	if !o.skipped("matrix") {
		planned += time.Duration(len(scs)) * o.d
	}
	if !o.skipped("cache") {
		planned += plannedCache(copts, max(1, strings.Count(o.cache.Addr, ",")+1))
	}
	var pw io.Writer
	if f, ok := stderr.(*os.File); (ok && isTerminal(f) && o.progress == "auto") || o.progress == "on" {
		pw = stderr
	}
	prog := newProgress(pw, planned)
	defer prog.Close()

	rep := &Report{StartedAt: time.Now(), Metadata: collectMetadata(ctx, o), Command: o.command}
	err = runSections(ctx, rep, o, sectionPlan{targets: targets, pathLimits: pathLimits, matrixAddr: matrixAddr, matrixInProcess: o.matrix == "",
		limit: limit, scs: scs, copts: copts}, prog)
	rep.DurationSeconds = time.Since(rep.StartedAt).Seconds()
	return rep, err
}

// sectionPlan is what runReport resolved from the flags for the sections.
type sectionPlan struct {
	targets    []srdexperiment.Target
	pathLimits map[string]float64
	matrixAddr string
	// matrixInProcess says matrixAddr is the in-process server.
	matrixInProcess bool
	limit           float64
	scs             []matrixScenario
	copts           cacheOptions
}

// runSections runs the parts that are not skipped, in order. A section that
// fails or is interrupted keeps what it measured; the ones after it do not
// start.
func runSections(ctx context.Context, rep *Report, o *options, p sectionPlan, prog *progress) error {
	var err error
	if !o.skipped("paths") {
		if rep.Paths, err = runPaths(ctx, p.targets, p.pathLimits, o, prog); err != nil {
			return err
		}
	}
	if !o.skipped("matrix") {
		if rep.Matrix, err = runMatrix(ctx, p.matrixAddr, p.matrixInProcess, p.limit, o.d, o.interval, p.scs, prog); err != nil {
			return err
		}
	}
	if !o.skipped("cache") {
		if rep.Cache, err = cacheSection(ctx, o, p.copts, prog); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// collectMetadata describes the run: host, versions, the E1 interface and
// every flag.
func collectMetadata(ctx context.Context, o *options) *runinfo.Metadata {
	iface := o.iface
	if iface == "" && !o.skipped("paths") {
		iface, _ = defaultRouteInterface()
	}
	return runinfo.Collect(ctx, &runinfo.Config{
		Interface: iface, Settings: o.settings,
		IMDSEndpoint: o.imds, IMDSTimeout: o.imdsTimeout,
	})
}

// cacheSection runs E3 against -cache / -cache-config, or else against
// local valkey/redis servers, or else against the in-process miniredis
// (labelled so), or says why it cannot.
func cacheSection(ctx context.Context, o *options, copts cacheOptions, prog *progress) (*CacheSection, error) {
	targets, err := o.cache.Targets(o.cacheConfig)
	if err != nil {
		return nil, fmt.Errorf("-cache: %w", err)
	}
	note := ""
	if len(targets) == 0 {
		set, err := defaultCacheTargets(ctx, o.localBinaries())
		if err != nil {
			return &CacheSection{Skipped: err.Error()}, nil
		}
		defer set.cleanup()
		copts.Engines = set.engines(copts.Engines)
		copts.Local = set.servers
		targets, note = set.targets, set.note
	}
	sec, err := runCache(ctx, targets, copts, prog)
	if sec != nil {
		sec.ServerNote = note
	}
	return sec, err
}

// servers are the in-process servers the default run measures.
type servers struct {
	throughputAddr string // host:port of the iperf3-compatible server
	pingAddr       string // host:port of the sockperf-compatible UDP server
	stop           func()
}

func (s *servers) close() {
	if s.stop != nil {
		s.stop()
	}
}

// startServers starts the in-process servers that the parts without remote
// targets need.
func startServers(ctx context.Context, o *options) (*servers, error) {
	s := &servers{}
	needThroughput := (o.paths == "" && !o.skipped("paths")) || (o.matrix == "" && !o.skipped("matrix"))
	needPing := o.paths == "" && !o.skipped("paths")
	if !needThroughput && !needPing {
		return s, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	running := 0
	s.stop = func() {
		cancel()
		for ; running > 0; running-- {
			<-done
		}
	}
	if needThroughput {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("starting the iperf3-compatible server: %w", err)
		}
		s.throughputAddr = ln.Addr().String()
		running++
		go func() {
			if srv, err := throughput.NewServer(nil); err == nil {
				_ = srv.Serve(ctx, ln)
			}
			done <- struct{}{}
		}()
	}
	if needPing {
		ls, err := latency.NewServer(nil)
		if err != nil {
			s.stop()
			return nil, err
		}
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("starting the sockperf-compatible server: %w", err)
		}
		s.pingAddr = pc.LocalAddr().String()
		running++
		go func() {
			_ = ls.ServePacket(ctx, pc)
			done <- struct{}{}
		}()
	}
	return s, nil
}

func withDefaultPort(hostport string, port int) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), fmt.Sprint(port))
}

func writeText(w io.Writer, rep *Report) error {
	if rep.Metadata != nil {
		if err := rep.Metadata.WriteText(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if rep.Paths != nil {
		if err := writePathsText(w, rep.Paths); err != nil {
			return err
		}
	}
	if rep.Matrix != nil {
		if err := writeMatrixText(w, rep.Matrix); err != nil {
			return err
		}
	}
	if rep.Cache != nil {
		if err := writeCacheText(w, rep.Cache); err != nil {
			return err
		}
	}
	if rep.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED: %s; the tables hold what finished\n", rep.Error)
	}
	for _, e := range rep.PlotErrors {
		fmt.Fprintf(w, "plot not drawn: %s\n", e)
	}
	_, err := fmt.Fprintf(w, "report took %.1f s\n", rep.DurationSeconds)
	return err
}

// writeOut writes report.json into dir first, so that it exists whatever
// happens to the plots, then the plots, then report.json again with the
// plots listed, then report.md and report.html. A plot that cannot be
// drawn is named in PlotErrors and on stderr; it fails nothing.
func writeOut(dir string, rep *Report, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep.Plots, rep.PlotErrors = nil, nil
	if err := writeJSONFile(filepath.Join(dir, "report.json"), rep); err != nil {
		return err
	}
	for _, pl := range plotsOf(rep) {
		for _, ext := range []string{"svg", "png"} {
			name := pl.name + "." + ext
			if err := drawSafely(filepath.Join(dir, name), pl); err != nil {
				rep.PlotErrors = append(rep.PlotErrors, fmt.Sprintf("%s: %v", name, err))
				fmt.Fprintf(stderr, "report: plot %s not drawn: %v\n", name, err)
				continue
			}
			rep.Plots = append(rep.Plots, name)
		}
	}
	if err := writeJSONFile(filepath.Join(dir, "report.json"), rep); err != nil {
		return err
	}
	return writePublished(dir, rep)
}

func writeJSONFile(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// plotSpec is one figure of -out.
type plotSpec struct {
	name, title string
	series      []spectrumSeries
	// timeSeries, when set, makes a throughput-over-time plot.
	timeSeries []timeSeries
	limit      float64
}

// plotsOf lists the figures the report has data for.
func plotsOf(rep *Report) []plotSpec {
	var out []plotSpec
	if rep.Paths != nil && rep.Paths.Result != nil {
		if series := rttSeries(rep.Paths); len(series) > 0 {
			title := "UDP ping-pong RTT by path"
			if len(rep.Paths.loadedHists) > 0 {
				title = "UDP ping-pong RTT by path, idle and under load"
			}
			out = append(out, plotSpec{name: "rtt-spectrum", title: title, series: series})
		}
	}
	if rep.Matrix != nil {
		if pl := matrixPlot(rep.Matrix); pl != nil {
			out = append(out, *pl)
		}
	}
	if rep.Cache != nil {
		var series []spectrumSeries
		for _, ce := range rep.Cache.Endpoints {
			for _, w := range ce.Workloads {
				for _, a := range []*median.Result{w.Pool, w.Connect} {
					if modeFailure(a) != nil {
						continue // its latencies are its errors'
					}
					if r := medianRun(a); r != nil {
						series = append(series, spectrumSeries{Name: ce.Label + " " + a.Engine + " " + string(a.Mode), Hist: r.Histogram, Summary: &r.Latency})
					}
				}
			}
		}
		if len(series) > 0 {
			title := "cache operation latency by endpoint, engine and mode"
			if rep.Cache.ServerNote != "" {
				title += "\n(" + embeddedNote + ")"
			}
			out = append(out, plotSpec{name: "cache-spectrum", title: title, series: series})
		}
	}
	return out
}

// matrixPlot is the throughput-over-time figure of the matrix rows.
func matrixPlot(m *MatrixSection) *plotSpec {
	var series []timeSeries
	for _, r := range m.Rows {
		if len(r.Intervals) > 0 {
			series = append(series, timeSeries{Name: r.Scenario + " " + r.Direction, Points: r.Intervals})
		}
	}
	if len(series) == 0 {
		return nil
	}
	return &plotSpec{name: "matrix-throughput", title: "E2 throughput over time per matrix row", timeSeries: series, limit: m.LimitBitsPerSecond}
}

// drawSafely draws one plot; a panic in the plotting library becomes an
// error, so that it cannot take report.json with it.
func drawSafely(file string, pl plotSpec) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report: plot panicked: %v", r)
		}
	}()
	if pl.timeSeries != nil {
		return saveThroughputOverTime(file, pl.title, pl.limit, pl.timeSeries)
	}
	return savePercentileSpectrum(file, pl.title, pl.series)
}

// medianRun picks the run whose p50 is the aggregate's median, so the plot
// shows a real run rather than a blend.
func medianRun(a *median.Result) *cache.RunResult {
	var best *cache.RunResult
	if a == nil {
		return nil
	}
	for _, r := range a.Results {
		if best == nil || math.Abs(float64(r.Latency.P50)/1e3-usRange(a.P50).Median) < math.Abs(float64(best.Latency.P50)/1e3-usRange(a.P50).Median) {
			best = r
		}
	}
	return best
}
