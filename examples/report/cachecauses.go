package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
)

// ConnectCauses is what one engine's connect-per-op runs waited on
// (cache.Causes), summed over its runs: per cause, the connects that
// waited on it, the time their phases took, and what its source counted.
type ConnectCauses struct {
	Connects map[string]int64         `json:"connects,omitempty"`
	Added    map[string]time.Duration `json:"added_ns,omitempty"`
	Events   map[string]int64         `json:"events,omitempty"`
	// Tails are the runs' cache.Causes.Tail that name the cause holding
	// their p99, "run 2: p99 1.02 s: 14 of 487 connects (2.9 %) waited for
	// a SYN retransmission (1.02 s)"; empty when no cause held one.
	Tails []string `json:"tails,omitempty"`
	// From is the first run's cache.Causes.From: where the counts came
	// from.
	From string `json:"from,omitempty"`
}

// connectCauses sums a's runs' causes; nil when no run ran.
func connectCauses(a *median.Result) *ConnectCauses {
	if a == nil || len(a.Results) == 0 {
		return nil
	}
	cc := &ConnectCauses{}
	for i, r := range a.Results {
		if r == nil {
			continue
		}
		for k, n := range r.Causes.Connects {
			if cc.Connects == nil {
				cc.Connects, cc.Added, cc.Events = map[string]int64{}, map[string]time.Duration{}, map[string]int64{}
			}
			cc.Connects[k] += n
			cc.Added[k] += r.Causes.Added[k]
			cc.Events[k] += r.Causes.Events[k]
		}
		if r.Causes.Tail != "" {
			cc.Tails = append(cc.Tails, fmt.Sprintf("run %d: %s", i+1, r.Causes.Tail))
		}
		if cc.From == "" {
			cc.From = r.Causes.From
		}
	}
	return cc
}

// causeOrder is the order of the causes in a cell, and each one's short
// name there.
var causeOrder = []struct{ key, short string }{
	{"syn_retransmit", "SYN rtx"},
	{"listen_queue", "listen queue"},
	{"dns_retry", "DNS retry"},
	{"tls_overrun", "TLS overrun"},
	{"auth_overrun", "AUTH overrun"},
	{"slots_overrun", "SLOTS overrun"},
	{"client_budget", "budget"},
}

// causesCell prints what connects waited on, in one cell: "2 SYN rtx
// (1.02 s), 1 DNS retry (1.01 s)", each with the mean time its connects'
// waiting phases took; "none" when nothing waited.
func causesCell(connects map[string]int64, added map[string]time.Duration) string {
	var parts []string
	one := func(key, short string) {
		if n := connects[key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n, short, shortDuration(added[key]/time.Duration(n))))
		}
	}
	known := map[string]bool{}
	for _, c := range causeOrder {
		one(c.key, c.short)
		known[c.key] = true
	}
	var other []string
	for k := range connects {
		if !known[k] {
			other = append(other, k)
		}
	}
	slices.Sort(other)
	for _, k := range other {
		one(k, strings.ReplaceAll(k, "_", " "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// shortDuration prints d to three figures: "1.02 s", "203 ms", "850 us".
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3g us", float64(d)/1e3)
}

// probeCausesCell is a probe row's causes, "-" without a probe.
func probeCausesCell(s *cache.ProbeSummary) string {
	if s == nil || s.Probes == 0 {
		return "-"
	}
	return causesCell(s.Causes.Connects, s.Causes.Added)
}

// causesLegend explains the causes column under the E3 tables.
const causesLegend = "causes: the connects that waited on each cause (cache.Causes; connect-per-op: all runs), with the mean time their waiting phase took. " +
	"SYN rtx: a SYN sent again (TCP_INFO after the connect; for a remote endpoint it includes a full listen queue at the server); " +
	"listen queue: SYNs the server's full listen queue dropped (TcpExtListenDrops, known only for a local endpoint); " +
	"DNS retry: a query that timed out; TLS/AUTH/SLOTS overrun: the phase ran 150 ms past its round trips (a lost flight); " +
	"budget: the set-up ran out of the client's connection budget"

// writeProbeTails prints, under the phases table, the probes' tails that a
// cause holds.
func writeProbeTails(w io.Writer, sec *CacheSection) {
	for _, ce := range sec.Endpoints {
		if ce.Probe != nil && ce.Probe.Causes.Tail != "" {
			fmt.Fprintf(w, "%s probes' total: %s\n", ce.Label, ce.Probe.Causes.Tail)
		}
	}
}

// writeConnectTails prints, under the pooled vs connect-per-op table, the
// legend of its causes column and, per row, the runs whose p99 a cause
// holds; or that none does.
func writeConnectTails(w io.Writer, sec *CacheSection) {
	var lines []string
	rows := 0
	for _, ce := range sec.Endpoints {
		for _, wl := range ce.Workloads {
			cc := wl.connectCauses()
			if cc == nil {
				continue
			}
			rows++
			if len(cc.Tails) > 0 {
				lines = append(lines, fmt.Sprintf("%s %s connect: %s", ce.Label, wl.Engine, strings.Join(cc.Tails, "; ")))
			}
		}
	}
	if rows == 0 {
		return
	}
	fmt.Fprintln(w, causesLegend)
	if len(lines) == 0 {
		fmt.Fprintln(w, "connect-per-op tails: no cause holds a p99 (too few connects waited on one to reach it)")
		return
	}
	fmt.Fprintln(w, "connect-per-op tails held by a cause:")
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

// connectCauses is the row's connect-per-op causes: those runWorkloads
// kept, else summed from Connect.
func (wl *CacheWorkload) connectCauses() *ConnectCauses {
	if wl.ConnectCauses != nil {
		return wl.ConnectCauses
	}
	return connectCauses(wl.Connect)
}

// connectCausesCell is a workload row's connect causes, "-" when
// connect-per-op did not run.
func connectCausesCell(wl *CacheWorkload) string {
	cc := wl.connectCauses()
	if cc == nil {
		return "-"
	}
	return causesCell(cc.Connects, cc.Added)
}
