package srd

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/netperfkit/netperfkit/ethtool"
)

// Window is the ENA counter evidence of one measurement window (one phase
// of RunExperiment, or two snapshots taken by hand): how much eligible
// traffic SRD carried and which ENI allowance, if any, limited the traffic.
// In JSON the coverage fields, the allowance deltas under their counter
// names (bw_in_allowance_exceeded ... conntrack_allowance_available) and
// limited_by sit side by side.
type Window struct {
	// Phase names the phase the window spans ("1-flow", "n-stream",
	// "rtt"); "" for a window taken by hand.
	Phase string `json:"phase,omitempty"`
	CoverageReport
	// AllowanceDelta is nil when the interface has no allowance counters;
	// AllowanceNote then says why. Read its fields only when it is set.
	*ethtool.AllowanceDelta
	AllowanceNote string `json:"allowance_note,omitempty"`
	// LimitedBy names the allowance counters that grew in the window
	// (ethtool.AllowanceDelta.Exceeded): empty when none did or when there
	// are no allowance counters. A counter that restarted in the window
	// (listed in Reset) is named when it counted packets since the
	// restart: its delta is a lower bound above 0.
	LimitedBy []string `json:"limited_by"`
}

// NewWindow compares two snapshots of one interface: SRD coverage (as
// Coverage does) and the allowance counters' deltas with the allowances
// that were hit.
func NewWindow(before, after *ethtool.Snapshot) Window {
	w := Window{CoverageReport: Coverage(before, after), LimitedBy: []string{}}
	a, ok := ethtool.Diff(before, after).Allowance()
	if !ok {
		w.AllowanceNote = "no *_allowance_exceeded statistics: not an ENA interface, or an ENA driver older than 2.2.10"
		return w
	}
	w.AllowanceDelta = &a
	w.LimitedBy = a.Exceeded()
	return w
}

// HasAllowance reports whether the window has allowance counters.
func (w Window) HasAllowance() bool { return w.AllowanceDelta != nil }

// LimitedByText is the "limited by" cell: the allowances that were hit
// without the common suffix ("pps", "bw_out, pps"), "-" when none was or
// the counters are missing.
func (w Window) LimitedByText() string {
	if len(w.LimitedBy) == 0 {
		return "-"
	}
	short := make([]string, len(w.LimitedBy))
	for i, n := range w.LimitedBy {
		short[i] = strings.TrimSuffix(n, "_allowance_exceeded")
	}
	return strings.Join(short, ", ")
}

// HasSRD reports whether the window has SRD counter deltas to show: the
// snapshots had ena_srd_* statistics, none was reset in between and they
// are consistent.
func (r CoverageReport) HasSRD() bool {
	switch r.Verdict {
	case VerdictNoStatistics, VerdictCountersReset, VerdictInconsistent, "":
		return false
	}
	return true
}

// Percent is the coverage as a percentage with as many decimals as it
// takes for a fallback to show: it is truncated, never rounded up, so 17
// fallback packets in 28 million read 99.999939, not 100. It is "100" when
// nothing fell back, and "-" when there is nothing to judge (no SRD
// statistics, reset or inconsistent counters, or no eligible packet).
func (r CoverageReport) Percent() string {
	if !r.HasSRD() || r.EligibleTxPktsDelta == 0 {
		return "-"
	}
	return coveragePercent(r.TxPktsDelta, r.EligibleTxPktsDelta)
}

func coveragePercent(tx, eligible uint64) string {
	if tx >= eligible {
		return strconv.FormatFloat(100*float64(tx)/float64(eligible), 'f', -1, 64)
	}
	// Two significant digits of the shortfall, at least three decimals.
	short := 100 * float64(eligible-tx) / float64(eligible)
	d := max(3, int(math.Ceil(-math.Log10(short)))+1)
	d = min(d, 15)
	scale := math.Pow(10, float64(d))
	// The exact ratio in integers avoids float rounding up to 100.
	v := math.Floor(100*float64(tx)/float64(eligible)*scale) / scale
	s := fmt.Sprintf("%.*f", d, v)
	if strings.HasPrefix(s, "100") {
		s = "99." + strings.Repeat("9", d)
	}
	return s
}

// Replay is a snapshot source for ExperimentConfig.Snapshot that returns
// saved snapshots (ethtool.ParseSnapshot of `ethtool -S` text or of
// enastat -json) in order, one per call, whatever interface is asked for:
// RunExperiment reads 1 + 3 per target (before the first phase, after each
// phase). Past the last snapshot it returns an error.
func Replay(snaps ...*ethtool.Snapshot) func(iface string) (*ethtool.Snapshot, error) {
	var mu sync.Mutex
	next := 0
	return func(iface string) (*ethtool.Snapshot, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(snaps) {
			return nil, fmt.Errorf("srd: replay: %s: all %d snapshots were used", iface, len(snaps))
		}
		s := snaps[next]
		next++
		return s, nil
	}
}

// WriteWindows prints one row per phase window of every target: the SRD
// deltas, fallback, coverage and resource utilisation, the allowance
// counters' deltas and the allowances that limited the phase. Cells
// without counters read "-", never +0, and one line per cause says why.
func (r *ExperimentResult) WriteWindows(w io.Writer) error {
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
			cells := []string{t.Name, win.Phase, fmt.Sprintf("%.1f", win.WindowSeconds)}
			cells = append(cells, win.srdCells()...)
			cells = append(cells, win.allowanceCells()...)
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			if !win.HasSRD() {
				note("SRD: " + string(win.Verdict) + ": " + win.Reason)
			}
			if !win.HasAllowance() {
				note("allowances: " + win.AllowanceNote)
			} else if len(win.Reset) > 0 {
				note("allowances: " + strings.Join(win.Reset, ", ") + " restarted, or may have (a driver reset), in the window: their deltas (>=) are lower bounds")
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

func (win Window) srdCells() []string {
	if !win.HasSRD() {
		return []string{"-", "-", "-", "-", "-", "-"}
	}
	return []string{
		"+" + strconv.FormatUint(win.TxPktsDelta, 10), "+" + strconv.FormatUint(win.EligibleTxPktsDelta, 10),
		"+" + strconv.FormatUint(win.RxPktsDelta, 10), strconv.FormatUint(win.FallbackPkts, 10), win.Percent(),
		fmt.Sprintf("%d -> %d", win.ResourceUtilizationBeforePercent, win.ResourceUtilizationPercent),
	}
}

func (win Window) allowanceCells() []string {
	if !win.HasAllowance() {
		return []string{"-", "-", "-", "-", "-", "-", "-"}
	}
	a := win.AllowanceDelta
	avail := "-"
	if a.ConntrackAvailable != nil {
		avail = strconv.FormatUint(*a.ConntrackAvailable, 10)
	}
	cells := []string{}
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		cell := "+" + strconv.FormatUint(v, 10)
		if slices.Contains(a.Reset, ethtool.AllowanceCounters[i]) {
			cell = ">=" + cell // at least: the counter restarted in the window
		}
		cells = append(cells, cell)
	}
	return append(cells, avail, win.LimitedByText())
}
