package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency"
)

// cacheTarget is one endpoint configuration of E3.
type cacheTarget struct {
	Name     string
	Endpoint *cache.Endpoint
	// Workload runs the pooled vs connect-per-op workloads on this target;
	// the others are only probed.
	Workload bool
}

// CacheSection is E3: connection phases per configuration and pooled vs
// connect-per-operation workloads.
type CacheSection struct {
	// Skipped says why the section did not run, and how to make it run.
	Skipped string `json:"skipped,omitempty"`
	// Phases holds one probe summary per endpoint configuration.
	Phases []CachePhases `json:"phases"`
	// Modes holds the workload of the default engine by mode ("pool",
	// "connect"): the E3 table.
	Modes map[string]*cache.Aggregate `json:"modes"`
	// Engines holds every engine x mode aggregate that ran.
	Engines []*cache.Aggregate `json:"engines"`
	// Comparisons relate modes and engines on the same endpoint: connect
	// vs pool, and glide vs resp (the client library's own overhead).
	Comparisons []cache.Comparison `json:"comparisons"`
	// WorkloadEndpoint names the configuration the workloads ran on.
	WorkloadEndpoint string `json:"workload_endpoint,omitempty"`
}

// CachePhases is one row of the connection-phase table.
type CachePhases struct {
	Config  string                `json:"config"`
	Medians cachecli.PhaseMedians `json:"medians"`
	Summary *cache.ProbeSummary   `json:"summary"`
}

// localCacheTargets starts a plain and a TLS server through cachetest, or
// says why it cannot. The returned cleanup stops them.
func localCacheTargets(ctx context.Context) ([]cacheTarget, func(), error) {
	plain, err := cachetest.Start(ctx, nil)
	if err != nil {
		if errors.Is(err, cachetest.ErrNoServer) {
			return nil, func() {}, fmt.Errorf("no redis-server or valkey-server is installed, so no local cache could be started (%s), or point -cache at an endpoint", cachetest.InstallHint)
		}
		return nil, func() {}, fmt.Errorf("starting a local redis-server: %w", err)
	}
	targets := []cacheTarget{{Name: "local, no TLS", Endpoint: plain.Endpoint(), Workload: true}}
	closers := []func(){func() { _ = plain.Close() }}
	tlsSrv, err := cachetest.Start(ctx, &cachetest.Config{TLS: true})
	if err == nil {
		targets = append(targets, cacheTarget{Name: "local, TLS", Endpoint: tlsSrv.Endpoint()})
		closers = append(closers, func() { _ = tlsSrv.Close() })
	}
	return targets, func() {
		for _, c := range closers {
			c()
		}
	}, nil
}

// cacheOptions is what the command line sets for E3.
type cacheOptions struct {
	Probes   int
	Duration time.Duration
	Runs     int
	Workers  int
	// Engines are cachecli.Engines: nil is resp.
	Engines []cache.Engine
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

// plannedCache estimates how long E3 takes, for the progress display.
func plannedCache(o cacheOptions, targets int) time.Duration {
	return o.probeTime()*time.Duration(targets) + time.Duration(len(o.Engines)*2*o.Runs)*o.Duration
}

func runCache(ctx context.Context, targets []cacheTarget, o cacheOptions, prog *progress) (*CacheSection, error) {
	sec := &CacheSection{Modes: map[string]*cache.Aggregate{}}
	for _, t := range targets {
		prog.Start("E3 cache: probing "+t.Name, o.probeTime())
		p, err := cache.NewProber(ctx, t.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("cache %s: %w", t.Name, err)
		}
		s, err := p.Run(ctx, &cache.ProbeConfig{Probes: o.Probes})
		if s != nil && s.Probes > 0 {
			sec.Phases = append(sec.Phases, CachePhases{Config: t.Name, Medians: cachecli.Medians(s), Summary: s})
		}
		if err != nil {
			return sec, fmt.Errorf("cache %s: %w", t.Name, err)
		}
	}
	for _, t := range targets {
		if t.Workload {
			if err := runWorkloads(ctx, t, o, prog, sec); err != nil {
				return sec, err
			}
			break
		}
	}
	return sec, nil
}

// runWorkloads runs every engine in both modes on t and compares them.
func runWorkloads(ctx context.Context, t cacheTarget, o cacheOptions, prog *progress, sec *CacheSection) error {
	sec.WorkloadEndpoint = t.Name
	byKey := map[string]*cache.Aggregate{}
	for _, eng := range o.Engines {
		name := cachecli.Name(eng)
		for _, mode := range []cache.Mode{cache.ModePool, cache.ModeConnect} {
			prog.Start(fmt.Sprintf("E3 cache: %s %s x%d on %s", name, mode, o.Runs, t.Name), time.Duration(o.Runs)*o.Duration)
			agg, err := cache.RunRepeated(ctx, t.Endpoint, &cache.WorkloadConfig{
				Engine: eng, Mode: mode, Workers: o.Workers, Duration: o.Duration, Runs: o.Runs,
			})
			if agg != nil && len(agg.Results) > 0 {
				sec.Engines = append(sec.Engines, agg)
			}
			if err != nil {
				return fmt.Errorf("cache %s %s %s: %w", t.Name, name, mode, err)
			}
			byKey[name+"/"+string(mode)] = agg
			if eng == o.Engines[0] {
				sec.Modes[string(mode)] = agg
			}
		}
	}
	for _, eng := range o.Engines {
		name := cachecli.Name(eng)
		pool, conn := byKey[name+"/pool"], byKey[name+"/connect"]
		sec.Comparisons = append(sec.Comparisons, cache.Compare(name+" pool", pool, name+" connect", conn))
	}
	if len(o.Engines) > 1 {
		base, other := cachecli.Name(o.Engines[1]), cachecli.Name(o.Engines[0])
		for _, mode := range []string{"pool", "connect"} {
			sec.Comparisons = append(sec.Comparisons, cache.Compare(base+" "+mode, byKey[base+"/"+mode], other+" "+mode, byKey[other+"/"+mode]))
		}
	}
	return nil
}

func writeCacheText(w io.Writer, sec *CacheSection) error {
	fmt.Fprintln(w, "E3 cache: connection phases (medians, us)")
	if sec.Skipped != "" {
		fmt.Fprintf(w, "  not run: %s\n\n", sec.Skipped)
		return nil
	}
	t := newTable(w, "config", "probes", "errors", "DNS", "TCP", "TLS", "AUTH", "CLUSTER SLOTS", "GET", "total (us)")
	for _, p := range sec.Phases {
		m := p.Medians
		t.row(p.Config, fmt.Sprint(p.Summary.Probes), fmt.Sprint(p.Summary.Probes-p.Summary.Succeeded), us(m.DNSUs), us(m.TCPUs), us(m.TLSUs), us(m.AuthUs), us(m.ClusterSlotsUs), us(m.GetUs), us(m.TotalUs))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(sec.Engines) == 0 {
		fmt.Fprintln(w)
		return nil
	}
	fmt.Fprintf(w, "\nE3 cache: pooled vs connect-per-op on %s (median of runs [min-max])\n", sec.WorkloadEndpoint)
	t = newTable(w, "engine", "mode", "runs", "p50 (us)", "p99 (us)", "ops/s", "attempts", "errors")
	for _, a := range sec.Engines {
		t.row(string(a.Engine), string(a.Mode), fmt.Sprint(len(a.Results)),
			rangeText(a.P50Us), rangeText(a.P99Us), rangeText(a.OpsPerSec),
			fmt.Sprint(a.Attempts), fmt.Sprint(a.Errors))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nE3 cache: ratios (other / base)")
	t = newTable(w, "base", "other", "p50", "p99", "ops/s")
	for _, c := range sec.Comparisons {
		t.row(c.Base, c.Other, fmt.Sprintf("%.2fx", c.P50Ratio), fmt.Sprintf("%.2fx", c.P99Ratio), fmt.Sprintf("%.2fx", c.OpsPerSecRatio))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// rangeText prints a median of runs with its range: "151 [148-160]".
func rangeText(r latency.Range) string {
	return fmt.Sprintf("%.0f [%.0f-%.0f]", r.Median, r.Min, r.Max)
}
