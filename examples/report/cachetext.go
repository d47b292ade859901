package main

import (
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// errorClasses groups error kinds as the field study did: glide's
// ClosingError-like failures (the connection closed, broke or was
// recovering), RequestError-like failures (the request was refused or
// failed) and timeouts. A cancel at the end of a run is none of them.
func errorClasses(a ...*median.Result) (closing, request, timeout int64) {
	for _, ag := range a {
		if ag == nil {
			continue
		}
		for k, n := range ag.ErrorsByKind {
			switch k {
			case cache.ErrCanceled:
			case cache.ErrTimeout, cache.ErrConnectTimeout:
				timeout += n
			case cache.ErrClosing, cache.ErrRecovery, cache.ErrConnection, cache.ErrConnectRefused, cache.ErrConnect:
				closing += n
			default:
				request += n
			}
		}
	}
	return closing, request, timeout
}

func writeCacheText(w io.Writer, sec *CacheSection) error {
	fmt.Fprintln(w, "E3 cache: connection phases (medians, us)")
	if sec.Skipped != "" {
		fmt.Fprintf(w, "  not run: %s\n\n", sec.Skipped)
		return nil
	}
	if sec.ServerNote != "" {
		fmt.Fprintf(w, "NOTE: %s\n", sec.ServerNote)
	}
	t := newTable(w, "config", "probes", "errors", "DNS", "TCP", "TLS", "AUTH", "CLUSTER SLOTS", "GET", "total (us)", "causes")
	for _, ce := range sec.Endpoints {
		if ce.Medians == nil {
			probes, failed := "0", "-"
			if ce.Probe != nil {
				probes, failed = fmt.Sprint(ce.Probe.Probes), fmt.Sprint(ce.Probe.Probes-ce.Probe.Succeeded)
			}
			t.row(ce.Label, probes, failed, "-", "-", "-", "-", "-", "-", "-", probeCausesCell(ce.Probe))
			continue
		}
		m, s := ce.Medians, ce.Probe
		ph := func(p cache.Phase, v float64) string { return phaseCell(s, p, v) }
		t.row(ce.Label, fmt.Sprint(s.Probes), fmt.Sprint(s.Probes-s.Succeeded), ph(cache.PhaseDNS, m.DNSUs), ph(cache.PhaseConnect, m.TCPUs),
			ph(cache.PhaseTLS, m.TLSUs), ph(cache.PhaseAuth, m.AuthUs), ph(cache.PhaseClusterSlots, m.ClusterSlotsUs), ph(cache.PhaseCommand, m.GetUs), us(m.TotalUs), probeCausesCell(s))
	}
	if err := t.flush(); err != nil {
		return err
	}
	writeProbeTails(w, sec)
	for _, ce := range sec.Endpoints {
		if ce.ProbeError != "" {
			fmt.Fprintf(w, "%s: probe error: %s\n", ce.Label, ce.ProbeError)
		}
		if ce.ConnectStepsError != "" {
			fmt.Fprintf(w, "%s: connect-per-op steps: %s\n", ce.Label, ce.ConnectStepsError)
		}
	}
	writeConnectSteps(w, sec)
	if err := writeCacheWorkloads(w, sec); err != nil {
		return err
	}
	if err := writeUnderLoad(w, sec); err != nil {
		return err
	}
	if err := writeFailover(w, sec.Failover); err != nil {
		return err
	}
	if len(sec.Comparisons) > 0 {
		fmt.Fprintln(w, "\nE3 cache: ratios (other ÷ base; p50 1.15x means 15% slower, ops/s 0.32x a third of the rate)")
		t = newTable(w, "kind", "base", "other", "p50", "p99", "ops/s", "p50 vs base", "ops/s vs base")
		var tests []*RunTest
		var missing []string
		for _, c := range sec.Comparisons {
			if c.Missing != "" {
				t.row(c.Kind, c.Base, c.Other, "-", "-", "-", "-", "-")
				missing = append(missing, fmt.Sprintf("no ratio for %s vs %s: %s", c.Base, c.Other, c.Missing))
				continue
			}
			t.row(c.Kind, c.Base, c.Other, fmt.Sprintf("%.2fx", c.P50Ratio), fmt.Sprintf("%.2fx", c.P99Ratio), fmt.Sprintf("%.2fx", c.OpsPerSecRatio),
				c.P50Test.cell(), c.OpsTest.cell())
			tests = append(tests, c.P50Test, c.OpsTest)
		}
		if err := t.flush(); err != nil {
			return err
		}
		for _, m := range missing {
			fmt.Fprintln(w, m)
		}
		fmt.Fprintln(w, "vs base: change of the median where the runs differ (Mann-Whitney U test, p < 0.05; ~ when they cannot tell), as benchstat prints it")
		if n := tooFewNote(tests...); n != "" {
			fmt.Fprintln(w, n)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// phaseCell prints a phase's median, or "-" when no probe went through the
// phase (DNS for an IP address, TLS and AUTH on a plain endpoint without a
// user, CLUSTER SLOTS off-cluster): a phase that did not happen was not
// measured as 0 µs.
func phaseCell(s *cache.ProbeSummary, p cache.Phase, medianUs float64) string {
	if s == nil || s.Phases[p].Observations == 0 {
		return "-"
	}
	return us(medianUs)
}

// writeCacheWorkloads prints one row per configuration and engine: pool and
// connect-per-op p50, p99 and ops/s as median [min-max] of the runs,
// attempts, and errors by class.
func writeCacheWorkloads(w io.Writer, sec *CacheSection) error {
	rows := 0
	for _, ce := range sec.Endpoints {
		rows += len(ce.Workloads)
	}
	if rows == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nE3 cache: pooled vs connect-per-op (median of runs [min-max])")
	t := newTable(w, "config", "engine", "runs", "pool p50 (us)", "pool p99 (us)", "pool ops/s", "connect p50 (us)", "connect p99 (us)", "connect ops/s", "attempts", "closing", "request", "timeout", "connect causes")
	var notes, debris []string
	for _, ce := range sec.Endpoints {
		for _, wl := range ce.Workloads {
			cells := []string{ce.Label, wl.Engine, runsText(wl.Pool, wl.Connect)}
			cells = append(cells, aggCells(wl.Pool)...)
			cells = append(cells, aggCells(wl.Connect)...)
			for _, m := range []struct {
				name string
				a    *median.Result
			}{{"pool", wl.Pool}, {"connect", wl.Connect}} {
				if f := modeFailure(m.a); f != nil {
					notes = append(notes, fmt.Sprintf("%s %s %s: FAILED: %s", ce.Label, wl.Engine, m.name, f))
				}
			}
			var attempts int64
			for _, a := range []*median.Result{wl.Pool, wl.Connect} {
				if a != nil {
					attempts += a.Attempts
				}
			}
			cl, rq, to := errorClasses(wl.Pool, wl.Connect)
			cells = append(cells, fmt.Sprint(attempts), fmt.Sprint(cl), fmt.Sprint(rq), fmt.Sprint(to), connectCausesCell(wl))
			t.row(cells...)
			if n := debrisNote(ce.Label+" "+wl.Engine, wl.Connect); n != "" {
				debris = append(debris, n)
			}
			if wl.Error != "" {
				notes = append(notes, fmt.Sprintf("%s %s: error: %s", ce.Label, wl.Engine, wl.Error))
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	writeConnectTails(w, sec)
	if len(notes) > 0 {
		fmt.Fprintf(w, "FAILED: %s; its latencies would be those of its errors, so none are shown and no ratio uses them\n", failedRule)
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if len(debris) > 0 {
		fmt.Fprintln(w, "connect-per-op debris on the client host, per run: TIME_WAIT sockets towards the endpoint before -> after (share of the ephemeral port range blocked: held and not reusable, tcp_tw_reuse)")
	}
	for _, n := range debris {
		fmt.Fprintln(w, n)
	}
	writeServerCounts(w, sec)
	writeE3Kernel(w, sec)
	return nil
}

// debrisNote is one connect-per-op row's TIME_WAIT line, empty when its
// runs could not read the ports (not linux).
func debrisNote(label string, a *median.Result) string {
	text := a.DebrisText()
	if text == "" {
		return ""
	}
	n := fmt.Sprintf("  %s: %s", label, text)
	if a.SettleWait > 0 {
		n += fmt.Sprintf("; waited %.0f s for earlier runs' TIME_WAIT to clear", a.SettleWait.Seconds())
	}
	return n
}

func runsText(a ...*median.Result) string {
	n := 0
	for _, ag := range a {
		if ag != nil {
			n = max(n, len(ag.Results))
		}
	}
	return fmt.Sprint(n)
}

func aggCells(a *median.Result) []string {
	if a == nil {
		return []string{"-", "-", "-"}
	}
	if modeFailure(a) != nil {
		return []string{"FAILED", "-", "-"}
	}
	return []string{rangeText(usRange(a.P50)), rangeText(usRange(a.P99)), rangeText(a.OpsPerSec)}
}

// usRange is r in microseconds, the unit the report prints and compares.
func usRange(r latency.Range[time.Duration]) latency.Range[float64] {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return latency.Range[float64]{Median: us(r.Median), Min: us(r.Min), Max: us(r.Max), N: r.N}
}

// rangeText prints a median of runs with its range: "151 [148-160]".
func rangeText(r latency.Range[float64]) string {
	return fmt.Sprintf("%.0f [%.0f-%.0f]", r.Median, r.Min, r.Max)
}

// writeUnderLoad prints the under-load rows: RPM (as the IETF
// responsiveness draft combines it) and the probes' 95% trimmed means and
// p99 on new and on loaded connections while a pooled load runs.
func writeUnderLoad(w io.Writer, sec *CacheSection) error {
	var eps []*CacheEndpoint
	for _, ce := range sec.Endpoints {
		if ce.UnderLoad != nil || ce.UnderLoadError != "" {
			eps = append(eps, ce)
		}
	}
	if len(eps) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nE3 cache: under load (pooled load, probes open-loop; RPM = 60 s / weighted trimmed mean)")
	t := newTable(w, "config", "RPM", "new conn mean (us)", "new conn p99 (us)", "loaded mean (us)", "loaded p99 (us)", "probe errors", "load ops/s")
	var notes []string
	for _, ce := range eps {
		r := ce.UnderLoad
		if r == nil {
			t.row(ce.Label, "-", "-", "-", "-", "-", "-", "-")
			notes = append(notes, fmt.Sprintf("%s: under load: %s", ce.Label, ce.UnderLoadError))
			continue
		}
		ops := "-"
		if r.Load != nil {
			ops = fmt.Sprintf("%.0f", r.Load.OpsPerSec)
		}
		t.row(ce.Label, fmt.Sprintf("%.0f", r.RPM), us(float64(r.NewConnection.TrimmedMean)/1e3), us(float64(r.NewConnection.Latency.P99)/1e3),
			us(float64(r.Loaded.TrimmedMean)/1e3), us(float64(r.Loaded.Latency.P99)/1e3), fmt.Sprint(r.NewConnection.Errors+r.Loaded.Errors), ops)
		if ce.UnderLoadError != "" {
			notes = append(notes, fmt.Sprintf("%s: under load: %s", ce.Label, ce.UnderLoadError))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
