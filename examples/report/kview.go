package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// keepKernel keeps the kernel-to-kernel view of path's RTT run, or why it
// has none.
func (sec *PathsSection) keepKernel(path string, res *latency.PingPongResult) {
	if res.KernelRTT != nil {
		if sec.KernelRTT == nil {
			sec.KernelRTT = map[string]*latency.Summary{}
		}
		sec.KernelRTT[path] = res.KernelRTT
		return
	}
	if sec.NoKernelStamps == nil {
		sec.NoKernelStamps = map[string]string{}
	}
	sec.NoKernelStamps[path] = res.NoKernelStamps
}

// writeKernelRTT prints E1's kernel-to-kernel RTT, which measures the
// path without the client's scheduling, so it leads; the table after it
// has the application's view. Paths without stamps say why.
func writeKernelRTT(w io.Writer, sec *PathsSection) error {
	if len(sec.KernelRTT) == 0 && len(sec.NoKernelStamps) == 0 {
		return nil
	}
	if len(sec.KernelRTT) > 0 {
		fmt.Fprintln(w, "RTT, kernel-to-kernel (request's transmit stamp to reply's receive stamp: the path and the server, none of the client's scheduling; the table below has the application's view)")
		tb := newTable(w, "path", "kernel RTT p50 (us)", "kernel RTT p99 (us)", "kernel RTT p99.9 (us)", "observations")
		for _, t := range sec.Targets {
			if k := sec.KernelRTT[t.Name]; k != nil {
				tb.row(t.Name, us(float64(k.P50)/1e3), us(float64(k.P99)/1e3), us(float64(k.P999)/1e3), fmt.Sprint(k.Observations))
			}
		}
		if err := tb.flush(); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(sec.NoKernelStamps))
	for n := range sec.NoKernelStamps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "%s: no kernel stamps: %s\n", n, sec.NoKernelStamps[n])
	}
	return nil
}

// writeE3Kernel says, under E3's table, what the kernel-to-kernel view of
// its rows is: E3 runs closed loop, where the cache runner takes none,
// and the table (what an application gets from a client library) stands
// on the application's view.
func writeE3Kernel(w io.Writer, sec *CacheSection) {
	seen := map[string]bool{}
	var lines []string
	for _, ce := range sec.Endpoints {
		for _, wl := range ce.Workloads {
			for _, r := range []struct {
				mode string
				res  *kernelRow
			}{{"pool", rowOf(wl.Pool)}, {"connect", rowOf(wl.Connect)}} {
				if r.res == nil || (r.res.p50 == nil && r.res.why == "") {
					continue
				}
				var line string
				if r.res.p50 != nil {
					line = fmt.Sprintf("%s %s %s: kernel-to-kernel p50 %s p99 %s us (the path's and the server's share)", ce.Label, wl.Engine, r.mode, us(float64(r.res.p50.Median)/1e3), us(float64(r.res.p99.Median)/1e3))
				} else {
					line = fmt.Sprintf("%s %s: no kernel stamps: %s", wl.Engine, r.mode, r.res.why)
				}
				if !seen[line] {
					seen[line] = true
					lines = append(lines, line)
				}
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "E3 kernel-to-kernel view: "+strings.Join(lines, "; "))
	}
}

// kernelRow is an E3 row's kernel view, or why it has none.
type kernelRow struct {
	p50, p99 *latency.Range[time.Duration]
	why      string
}

func rowOf(a *median.Result) *kernelRow {
	if a == nil {
		return nil
	}
	return &kernelRow{p50: a.KernelP50, p99: a.KernelP99, why: a.NoKernelStamps}
}
