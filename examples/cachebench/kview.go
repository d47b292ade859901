package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/netperfkit/netperfkit/cache"
)

// printKernel prints, beside the table of application views above it,
// each row's kernel-to-kernel view (the request's transmit stamp to the
// reply's receive stamp, both the client kernel's): the path's and the
// server's share of those figures, taken on a sample of the requests
// (cache.KernelView: at least 1,000 a run, or all of a shorter one), whose
// size over all runs it states. Where a row has none it says why.
func printKernel(w io.Writer, o *output) {
	if len(o.Results) == 0 {
		return
	}
	fmt.Fprintln(w)
	var rows, none []string
	for _, a := range o.Results {
		if a.Result == nil || a.KernelP50 == nil || a.KernelP99 == nil {
			none = append(none, fmt.Sprintf("%s %s: no kernel stamps: %s", a.Engine, a.Mode, a.NoKernelStamps))
			continue
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%.0f\t(%.0f-%.0f)\t%.0f\t(%.0f-%.0f)\t%d\t%d of %d\t\n", a.Engine, a.Mode,
			us(a.KernelP50.Median), us(a.KernelP50.Min), us(a.KernelP50.Max),
			us(a.KernelP99.Median), us(a.KernelP99.Min), us(a.KernelP99.Max), a.KernelP50.N, a.KernelStamped, a.Succeeded))
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "kernel-to-kernel view (request's transmit stamp to reply's receive stamp: the path's and the server's share of the figures above), on a sample of the requests")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "engine\tmode\tkernel p50 us\t(min-max)\tkernel p99 us\t(min-max)\truns\tstamped\t")
		for _, r := range rows {
			fmt.Fprint(tw, r)
		}
		tw.Flush()
	}
	for _, n := range none {
		fmt.Fprintln(w, n)
	}
}

// kernelStamped is how many successful requests of runs were in their
// kernel view's sample (with a view or a lost stamp).
func kernelStamped(runs []*cache.RunResult) int64 {
	var n int64
	for _, r := range runs {
		if r != nil && r.Kernel != nil {
			n += r.Kernel.Response.Observations + r.Kernel.StampsLost
		}
	}
	return n
}
