package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/internal/gomaxprocs"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// cacheTarget is one labelled endpoint configuration of E3.
type cacheTarget = cachecli.Target

// CacheSection is E3: connection phases, and pooled vs connect-per-
// operation workloads, per labelled endpoint configuration.
type CacheSection struct {
	// Skipped says why the section did not run, and how to make it run.
	Skipped string `json:"skipped,omitempty"`
	// ServerNote qualifies every number of the section when it was
	// measured against the in-process miniredis (no -cache and no cache
	// server installed).
	ServerNote string `json:"server_note,omitempty"`
	// Endpoints holds one entry per configuration, in the order given.
	Endpoints []*CacheEndpoint `json:"endpoints"`
	// Comparisons relate configurations: connect ÷ pool per endpoint, each
	// endpoint ÷ the base endpoint per mode, and glide ÷ resp.
	Comparisons []CacheComparison `json:"comparisons"`
	// Failover is the failover drill on the local plain cluster (nil
	// against -cache endpoints, or with -cache-failover=false).
	Failover *CacheFailover `json:"failover,omitempty"`
}

// CacheEndpoint is one configuration: its probe and its workloads.
type CacheEndpoint struct {
	Label string `json:"label"`
	// Endpoint describes it without secrets (cache.Endpoint.String).
	Endpoint string                 `json:"endpoint"`
	Medians  *cachecli.PhaseMedians `json:"medians,omitempty"`
	Probe    *cache.ProbeSummary    `json:"probe,omitempty"`
	// ProbeError is why the probe could not run.
	ProbeError string `json:"probe_error,omitempty"`
	// Workloads holds one entry per engine.
	Workloads []*CacheWorkload `json:"workloads"`
	// ConnectSteps times a resp connect-per-op operation step by step on
	// a cluster endpoint (nil off-cluster); ConnectStepsError says why it
	// could not run.
	ConnectSteps      *ConnectSteps `json:"connect_steps,omitempty"`
	ConnectStepsError string        `json:"connect_steps_error,omitempty"`
	// UnderLoad is the endpoint's responsiveness while a pooled load
	// saturates it (cacheResponsiveness): new connections and the loaded
	// connections probed open-loop, and RPM.
	UnderLoad *CacheResponsiveness `json:"under_load,omitempty"`
	// UnderLoadError is why the under-load row could not run.
	UnderLoadError string `json:"under_load_error,omitempty"`
}

// CacheWorkload is one engine's pool and connect-per-op runs on one
// endpoint: the field study's table row.
type CacheWorkload struct {
	Engine  string         `json:"engine"`
	Pool    *median.Result `json:"pool,omitempty"`
	Connect *median.Result `json:"connect,omitempty"`
	// Error is why a mode could not run (the engine failed on this
	// endpoint); the other endpoints and parts go on.
	Error string `json:"error,omitempty"`
	// PoolFailure and ConnectFailure are set when more than half of that
	// mode's attempts failed: Pool and Connect keep their numbers, but the
	// tables show the failure and its first error in place of latencies,
	// and no ratio or U test uses them.
	PoolFailure    *ModeFailure `json:"pool_failure,omitempty"`
	ConnectFailure *ModeFailure `json:"connect_failure,omitempty"`
	// ConnectCounts is what a local cluster's nodes saw of the
	// connect-per-op runs: connections and commands per operation (nil
	// against -cache endpoints and single servers).
	ConnectCounts *ServerCounts `json:"connect_server_counts,omitempty"`
	// ConnectCauses is what the connect-per-op runs' connection set-ups
	// waited on, summed over the runs, with the runs' tails that a cause
	// holds (nil when connect-per-op did not run).
	ConnectCauses *ConnectCauses `json:"connect_causes,omitempty"`
}

// CacheComparison is one ratio row: Kind is "connect/pool" (per endpoint),
// "endpoint" (other endpoint ÷ base endpoint, same engine and mode) or
// "engine" (glide ÷ resp).
type CacheComparison struct {
	Kind string `json:"kind"`
	median.Comparison
	// P50Test, P99Test and OpsTest compare the runs of the two sides
	// (Mann-Whitney U test, alpha 0.05), as benchstat does.
	P50Test *RunTest `json:"p50_test,omitempty"`
	P99Test *RunTest `json:"p99_test,omitempty"`
	OpsTest *RunTest `json:"ops_per_sec_test,omitempty"`
	// Missing says why the row has no ratios and no tests: a side failed
	// (its workload's ModeFailure). Its ratios are then zero.
	Missing string `json:"missing,omitempty"`
}

// valkeyBuilt is where scripts/install-peers.sh builds valkey-server.
const valkeyBuilt = ".cache/netperfkit-peers/valkey-8.0.1/bin/valkey-server"

// localServerBinaries lists the cache servers installed here: valkey-server
// (on PATH, $NETPERFKIT_VALKEY_SERVER or install-peers.sh's build) and
// redis-server, each labelled by its name.
func localServerBinaries() []string {
	var out []string
	valkey := []string{os.Getenv("NETPERFKIT_VALKEY_SERVER")}
	if p, err := exec.LookPath("valkey-server"); err == nil {
		valkey = append(valkey, p)
	}
	if home, err := os.UserHomeDir(); err == nil {
		valkey = append(valkey, filepath.Join(home, valkeyBuilt))
	}
	for _, p := range valkey {
		if st, err := os.Stat(p); p != "" && err == nil && !st.IsDir() {
			out = append(out, p)
			break
		}
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		out = append(out, p)
	}
	return out
}

// localBinaries is the servers E3 runs against without -cache: the first
// of localServerBinaries, or with -cache-servers all each of them.
func (o *options) localBinaries() []string {
	bins := localServerBinaries()
	if o.cacheServers != "all" && len(bins) > 1 {
		bins = bins[:1]
	}
	return bins
}

// localCacheTargets starts, for each server binary in bins (valkey-server,
// redis-server), a cluster of the field's shape (three primaries with a
// replica each, cluster-node-timeout 1000 ms) plain and with TLS+ACL,
// through cachetest, or says why it cannot. The servers are returned by
// label (the failover drill and the server-side counts use them); the
// returned cleanup stops them.
func localCacheTargets(ctx context.Context, bins []string) ([]cacheTarget, map[string]*cachetest.Server, func(), error) {
	var targets []cacheTarget
	var closers []func()
	servers := map[string]*cachetest.Server{}
	cleanup := func() {
		for _, c := range closers {
			c()
		}
	}
	if len(bins) == 0 {
		return nil, nil, cleanup, fmt.Errorf("no redis-server or valkey-server is installed (%s), or point -cache at endpoints", peertest.CacheInstallHint)
	}
	var errs []error
	for _, bin := range bins {
		for _, c := range localClusterConfigs(bin) {
			s, err := cachetest.Start(ctx, &c.cfg)
			if err != nil {
				errs = append(errs, fmt.Errorf("starting a local %s: %w", c.label, err))
				continue
			}
			closers = append(closers, func() { _ = s.Close() })
			targets = append(targets, cacheTarget{Label: c.label, Endpoint: s.Endpoint()})
			servers[c.label] = s
		}
	}
	if len(targets) == 0 {
		return nil, nil, cleanup, errors.Join(errs...)
	}
	for _, err := range errs {
		// The others run; say which did not.
		fmt.Fprintf(os.Stderr, "report: E3: %v\n", err)
	}
	return targets, servers, cleanup, nil
}

// cacheComparePairs parses -cache-compare: BASE/OTHER label pairs.
func cacheComparePairs(s string) ([][2]string, error) {
	var out [][2]string
	for _, p := range splitList(s) {
		base, other, ok := strings.Cut(p, "/")
		base, other = strings.TrimSpace(base), strings.TrimSpace(other)
		if !ok || base == "" || other == "" {
			return nil, fmt.Errorf("-cache-compare: %q is not BASE/OTHER", p)
		}
		out = append(out, [2]string{base, other})
	}
	return out, nil
}

// checkCacheCompare checks, before anything runs, that every label of
// -cache-compare names an E3 endpoint: the -cache / -cache-config labels,
// or without them those of the local servers. A pair naming an unknown
// label would otherwise yield no ratio row and no word why.
func checkCacheCompare(o *options) error {
	pairs, err := cacheComparePairs(o.cacheCompare)
	if err != nil || len(pairs) == 0 || o.skipped("cache") {
		return err
	}
	targets, err := o.cache.Targets(o.cacheConfig)
	if err != nil {
		return fmt.Errorf("-cache: %w", err)
	}
	var labels []string
	for _, t := range targets {
		labels = append(labels, t.Label)
	}
	if len(targets) == 0 {
		for _, bin := range o.localBinaries() {
			for _, c := range localClusterConfigs(bin) {
				labels = append(labels, c.label)
			}
		}
		if len(labels) == 0 {
			labels = embeddedLabels()
		}
	}
	for _, p := range pairs {
		for _, l := range p {
			if !slices.Contains(labels, l) {
				return fmt.Errorf("-cache-compare: no endpoint is labelled %q (labels: %s)", l, strings.Join(labels, ", "))
			}
		}
	}
	return nil
}

// cacheOptions is what the command line sets for E3.
type cacheOptions struct {
	Probes   int
	Duration time.Duration
	Runs     int
	Workers  int
	// Engines are cachecli.Engines: nil is resp.
	Engines []cache.Engine
	// Compare names BASE/OTHER label pairs for the endpoint ratios; empty
	// means every endpoint against the first.
	Compare [][2]string
	// Local holds the local servers by label (nil with -cache): their
	// server-side counts and the failover drill need them.
	Local map[string]*cachetest.Server
	// Failover runs the failover drill on the first local plain cluster.
	Failover bool
}

// warnWriter prefixes the warnings of cachecli.Engines with the tool's name.
type warnWriter struct{ w io.Writer }

func (ww warnWriter) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(ww.w, "report: %s", b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// probeTime estimates how long probing one target takes.
func (o cacheOptions) probeTime() time.Duration {
	return time.Duration(o.Probes) * 2 * time.Millisecond
}

// e3Settle is the longest E3 waits before a connect-per-op run for the
// TIME_WAIT sockets of the runs before it to clear (median.Config.Settle):
// linux keeps them 60 s, and a run that starts with much of the ephemeral
// port range held measures the kernel's port search (issue 31).
const e3Settle = 61 * time.Second

// plannedCache estimates how long E3 takes, for the progress display. It
// leaves out the waits for TIME_WAIT debris (e3Settle): none against
// loopback, where the default report's servers are, and up to e3Settle per
// connect-per-op run after an engine's first against anything else.
func plannedCache(o cacheOptions, targets int) time.Duration {
	d := time.Duration(targets) * (o.probeTime() + time.Duration(len(o.Engines)*2*o.Runs+1)*o.Duration)
	if o.Failover {
		// The drill, when there is a local cluster: a run per engine and
		// mode, and the rejoin after it.
		d += time.Duration(len(o.Engines)*2) * (failoverRun + failoverStop + time.Second)
	}
	return d
}

// runCache probes every target, then runs the workloads on every target. A
// target that fails becomes an error row; only ctx ending stops the
// section, with what finished.
func runCache(ctx context.Context, targets []cacheTarget, o cacheOptions, prog *progress) (*CacheSection, error) {
	sec := &CacheSection{}
	var err error
	for _, t := range targets {
		ce := &CacheEndpoint{Label: t.Label, Endpoint: t.Endpoint.String()}
		sec.Endpoints = append(sec.Endpoints, ce)
		prog.Start("E3 cache: probing "+t.Label, o.probeTime())
		if err := probeTarget(ctx, t, o, ce); err != nil {
			return sec, err
		}
		if t.Endpoint.Cluster && ce.Medians != nil {
			prog.Start("E3 cache: "+t.Label+" connect-per-op step by step", connectStepsRun)
			if ce.ConnectSteps, err = connectSteps(ctx, t.Endpoint); err != nil {
				ce.ConnectStepsError = err.Error()
			}
			if ctx.Err() != nil {
				return sec, fmt.Errorf("cache %s: %w", t.Label, ctx.Err())
			}
		}
	}
	for i, t := range targets {
		if err := runWorkloads(ctx, t, o, prog, sec.Endpoints[i]); err != nil {
			sec.Comparisons = compareCache(sec.Endpoints, o)
			return sec, err
		}
		if err := runUnderLoad(ctx, t, o, prog, sec.Endpoints[i]); err != nil {
			sec.Comparisons = compareCache(sec.Endpoints, o)
			return sec, err
		}
	}
	sec.Comparisons = compareCache(sec.Endpoints, o)
	if o.Failover {
		sec.Failover = runFailover(ctx, targets, o, prog)
		if ctx.Err() != nil {
			return sec, fmt.Errorf("cache failover: %w", ctx.Err())
		}
	}
	return sec, nil
}

// probeTarget fills ce's probe columns; it returns an error only when ctx
// ended.
func probeTarget(ctx context.Context, t cacheTarget, o cacheOptions, ce *CacheEndpoint) error {
	p, err := cache.NewProber(t.Endpoint)
	if err != nil {
		ce.ProbeError = err.Error()
		return ctx.Err()
	}
	s, err := p.Run(ctx, &cache.ProbeConfig{Probes: o.Probes})
	if s != nil && s.Probes > 0 {
		ce.Probe = s
		if s.Succeeded > 0 {
			m := cachecli.Medians(s)
			ce.Medians = &m
		} else {
			ce.ProbeError = probeFailure(s)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cache %s: %w", t.Label, ctx.Err())
	}
	if err != nil {
		ce.ProbeError = err.Error()
	}
	return nil
}

// probeFailure says why every probe failed: the first example of the most
// frequent kind.
func probeFailure(s *cache.ProbeSummary) string {
	var kind cache.ErrorKind
	for k, n := range s.ErrorsByKind {
		if n > s.ErrorsByKind[kind] || (n == s.ErrorsByKind[kind] && k < kind) {
			kind = k
		}
	}
	if ex := s.ErrorExamples[kind]; ex != "" {
		return fmt.Sprintf("all %d probes failed: %s", s.Probes, ex)
	}
	return fmt.Sprintf("all %d probes failed (%s)", s.Probes, kind)
}

// runWorkloads runs every engine in both modes on t. A failing engine is
// recorded in its row; only ctx ending returns an error.
func runWorkloads(ctx context.Context, t cacheTarget, o cacheOptions, prog *progress, ce *CacheEndpoint) error {
	for _, eng := range o.Engines {
		w := &CacheWorkload{Engine: cachecli.Name(eng)}
		ce.Workloads = append(ce.Workloads, w)
		for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
			prog.Start(fmt.Sprintf("E3 cache: %s %s %s x%d", t.Label, w.Engine, mode, o.Runs), time.Duration(o.Runs)*o.Duration)
			// Connect-per-op runs wait for earlier runs' TIME_WAIT
			// debris (Settle does nothing for pooled runs).
			srv, before := o.countsBefore(ctx, t, mode)
			wc := &cache.WorkloadConfig{Engine: eng, Mode: mode, Workers: o.Workers, Duration: o.Duration}
			// As cachebench runs it: connect-per-op on a P per 4 workers
			// (cache.Procs), unless GOMAXPROCS is in the environment.
			restore := gomaxprocs.Set(cachecli.Procs(0, wc))
			agg, err := median.Run(ctx, t.Endpoint, &median.Config{Runs: o.Runs, Settle: e3Settle, Workload: wc})
			restore()
			if before != nil && agg != nil {
				w.ConnectCounts = countsAfter(ctx, srv, before, agg.Attempts, t.Endpoint.User != "")
			}
			var failure *ModeFailure
			if agg != nil && len(agg.Results) > 0 {
				failure = modeFailure(agg)
				if mode == cache.Pooled {
					w.Pool, w.PoolFailure = agg, failure
				} else {
					w.Connect, w.ConnectFailure = agg, failure
					w.ConnectCauses = connectCauses(agg)
				}
			}
			if ctx.Err() != nil {
				return fmt.Errorf("cache %s %s %s: %w", t.Label, w.Engine, mode, ctx.Err())
			}
			if err != nil && (failure == nil || failure.Attempts == 0) {
				w.Error = fmt.Sprintf("%s: %v", mode, err)
				break
			}
			// An error with operations that mostly failed is the failure
			// the row shows; the endpoint answers, so the next mode runs.
		}
	}
	return nil
}

// runUnderLoad fills ce's under-load row: a pooled load on the resp engine
// for one workload duration, probed open-loop with new connections and on
// the loaded connections. A failure is recorded in the row; only ctx ending
// returns an error.
func runUnderLoad(ctx context.Context, t cacheTarget, o cacheOptions, prog *progress, ce *CacheEndpoint) error {
	if ce.Medians == nil {
		ce.UnderLoadError = "skipped: the endpoint could not be probed"
		return nil
	}
	prog.Start("E3 cache: "+t.Label+" responsiveness under load", o.Duration)
	res, err := cacheResponsiveness(ctx, t.Endpoint, &cacheRespConfig{
		Load: &cache.WorkloadConfig{Workers: o.Workers, Duration: o.Duration},
	})
	if res != nil {
		ce.UnderLoad = res
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cache %s under load: %w", t.Label, ctx.Err())
	}
	if err != nil {
		ce.UnderLoadError = err.Error()
	}
	return nil
}

// compareCache builds the ratio rows from what finished: of the modes that
// ran on both sides. A row one of whose sides failed says so instead of
// comparing.
func compareCache(eps []*CacheEndpoint, o cacheOptions) []CacheComparison {
	if len(o.Engines) == 0 {
		return nil
	}
	var out []CacheComparison
	add := func(kind string, base, other ratioSide) {
		if base.a != nil && other.a != nil {
			out = append(out, ratioRow(kind, base, other))
		}
	}
	// connect ÷ pool and the endpoint ratios are of the first engine, as the
	// modes table of the study; glide ÷ resp relates the engines.
	first := cachecli.Name(o.Engines[0])
	for _, ce := range eps {
		if w := workloadOf(ce, first); w != nil {
			add("connect/pool", sideOf(ce, w, "pool"), sideOf(ce, w, "connect"))
		}
		if g, r := workloadOf(ce, cachecli.Glide), workloadOf(ce, cachecli.Resp); g != nil && r != nil {
			for _, m := range []string{"pool", "connect"} {
				add("engine", sideOf(ce, r, m), sideOf(ce, g, m))
			}
		}
	}
	byLabel := map[string]*CacheEndpoint{}
	for _, ce := range eps {
		byLabel[ce.Label] = ce
	}
	pairs := o.Compare
	if len(pairs) == 0 {
		for _, ce := range eps[min(1, len(eps)):] {
			pairs = append(pairs, [2]string{eps[0].Label, ce.Label})
		}
	}
	for _, p := range pairs {
		base, other := byLabel[p[0]], byLabel[p[1]]
		if base == nil || other == nil {
			continue
		}
		bw, ow := workloadOf(base, first), workloadOf(other, first)
		for _, m := range []string{"pool", "connect"} {
			add("endpoint", sideOf(base, bw, m), sideOf(other, ow, m))
		}
	}
	return out
}

// workloadOf is ce's row of engine, nil when the engine did not run there.
func workloadOf(ce *CacheEndpoint, engine string) *CacheWorkload {
	for _, w := range ce.Workloads {
		if w.Engine == engine {
			return w
		}
	}
	return nil
}

// ratioSide is one side of a ratio row: an endpoint's engine in one mode,
// a nil when it did not run.
type ratioSide struct {
	label string
	a     *median.Result
}

// sideOf names w's mode ("pool" or "connect") on ce as the rows do; w may
// be nil.
func sideOf(ce *CacheEndpoint, w *CacheWorkload, mode string) ratioSide {
	var s ratioSide
	if w == nil {
		return s
	}
	s.label = ce.Label + " " + w.Engine + " " + mode
	if mode == "pool" {
		s.a = w.Pool
	} else {
		s.a = w.Connect
	}
	return s
}

// ratioRow relates other to base, or says why it cannot: a failed side's
// latencies are those of its errors, which compare with nothing.
func ratioRow(kind string, base, other ratioSide) CacheComparison {
	var why []string
	for _, s := range []ratioSide{base, other} {
		if r := noRatio(s.label, s.a); r != "" {
			why = append(why, r)
		}
	}
	if len(why) > 0 {
		return CacheComparison{Kind: kind, Comparison: median.Comparison{Base: base.label, Other: other.label}, Missing: strings.Join(why, "; ")}
	}
	return cacheRatio(kind, base.label, base.a, other.label, other.a)
}
