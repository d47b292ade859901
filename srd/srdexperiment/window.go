package srdexperiment

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
)

// Replay is a snapshot source for Config.Snapshot that returns saved
// snapshots (ethtool.ParseSnapshot of `ethtool -S` text or of enastat
// -json) in order, one per call, whatever interface is asked for: Run reads
// 1 + 3 per target (before the first phase, after each phase). Past the
// last snapshot it returns an error.
func Replay(snaps ...*ethtool.Snapshot) func(iface string) (*ethtool.Snapshot, error) {
	var mu sync.Mutex
	next := 0
	return func(iface string) (*ethtool.Snapshot, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(snaps) {
			return nil, fmt.Errorf("srdexperiment: replay: %s: all %d snapshots were used", iface, len(snaps))
		}
		s := snaps[next]
		next++
		if s == nil {
			return nil, fmt.Errorf("srdexperiment: replay: snapshot %d is nil", next-1)
		}
		return s, nil
	}
}

// WriteWindows prints one row per phase window of every target: the SRD
// deltas, fallback, coverage and resource utilisation, the allowance
// counters' deltas and the allowances that limited the phase. Cells
// without counters read "-", never +0, and one line per cause says why. A
// nil r or w is an error.
func (r *Result) WriteWindows(w io.Writer) error {
	if r == nil || w == nil {
		return errors.New("srdexperiment: WriteWindows: nil *Result or io.Writer w")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tphase\tseconds\tSRD tx\tSRD eligible\tSRD rx\tfallback\tcoverage (%)\tSRD util (%)\tbw_in\tbw_out\tpps\tconntrack\tlinklocal\tconntrack avail\tlimited by\t")
	var notes []string
	seen := map[string]bool{}
	note := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			notes = append(notes, n)
		}
	}
	for _, t := range r.Targets {
		for _, win := range t.Windows {
			cells := []string{t.Name, win.Phase, fmt.Sprintf("%.1f", win.Duration.Seconds())}
			cells = append(cells, srdCells(win)...)
			cells = append(cells, allowanceCells(win)...)
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			if !win.HasSRD() {
				note("SRD: " + string(win.Verdict) + ": " + win.Reason)
			}
			if win.Allowance == nil {
				note("allowances: no *_allowance_exceeded statistics: not an ENA interface, or an ENA driver older than 2.2.10")
			} else if len(win.Allowance.Reset) > 0 {
				note("allowances: " + strings.Join(win.Allowance.Reset, ", ") + " restarted, or may have (a driver reset), in the window: their deltas (>=) are lower bounds")
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

func srdCells(win srd.Window) []string {
	if !win.HasSRD() {
		return []string{"-", "-", "-", "-", "-", "-"}
	}
	return []string{
		"+" + strconv.FormatUint(win.TxPktsDelta, 10), "+" + strconv.FormatUint(win.EligibleTxPktsDelta, 10),
		"+" + strconv.FormatUint(win.RxPktsDelta, 10), strconv.FormatUint(win.FallbackPkts, 10), win.Percent(),
		fmt.Sprintf("%d -> %d", win.ResourceUtilizationBeforePercent, win.ResourceUtilizationPercent),
	}
}

func allowanceCells(win srd.Window) []string {
	a := win.Allowance
	if a == nil {
		return []string{"-", "-", "-", "-", "-", "-", "-"}
	}
	avail := "-"
	if a.ConntrackAvailable != nil {
		avail = strconv.FormatUint(*a.ConntrackAvailable, 10)
	}
	cells := []string{}
	names := ethtool.AllowanceCounters()
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		cell := "+" + strconv.FormatUint(v, 10)
		if slices.Contains(a.Reset, names[i]) {
			cell = ">=" + cell // at least: the counter restarted in the window
		}
		cells = append(cells, cell)
	}
	return append(cells, avail, win.LimitedByText())
}
