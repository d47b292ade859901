package srd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/netperfkit/netperfkit/ethtool"
)

// Window is the ENA counter evidence of one measurement window (two
// snapshots of an interface): how much eligible traffic SRD carried and
// which ENI allowance, if any, limited the traffic. In JSON the coverage
// fields, the allowance deltas under their counter names
// (bw_in_allowance_exceeded ... conntrack_allowance_available),
// allowance_note (why there are none, when there are none) and limited_by
// sit side by side, after "phase" when Phase is set.
type Window struct {
	// Phase names the window for the reader (srdexperiment's "1-flow",
	// "n-stream", "rtt"); empty when it has no name, and then absent
	// from the JSON.
	Phase string
	CoverageReport
	// Allowance is the change of the allowance counters in the window
	// (ethtool.Delta.Allowance); nil when the interface has none: not an
	// ENA interface, or an ENA driver older than 2.2.10.
	Allowance *ethtool.Allowance
	// LimitedBy names the allowance counters that grew in the window
	// (ethtool.Allowance.Exceeded): empty when none did or when there
	// are no allowance counters. A counter that restarted in the window
	// (listed in Allowance.Reset) is named when it counted packets since
	// the restart: its delta is a lower bound above 0.
	LimitedBy []string
}

// noAllowanceNote is allowance_note in the JSON of a Window without
// allowance counters.
const noAllowanceNote = "no *_allowance_exceeded statistics: not an ENA interface, or an ENA driver older than 2.2.10"

// windowJSON is Window's JSON shape.
type windowJSON struct {
	Phase string `json:"phase,omitempty"`
	coverageJSON
	*ethtool.Allowance
	AllowanceNote string   `json:"allowance_note,omitempty"`
	LimitedBy     []string `json:"limited_by"`
}

// MarshalJSON writes the window's fields side by side (see Window).
func (w Window) MarshalJSON() ([]byte, error) {
	out := windowJSON{Phase: w.Phase, coverageJSON: w.CoverageReport.wire(), Allowance: w.Allowance, LimitedBy: w.LimitedBy}
	if w.Allowance == nil {
		out.AllowanceNote = noAllowanceNote
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes; allowance_note and the
// read-out mode fields are derived and ignored.
func (w *Window) UnmarshalJSON(data []byte) error {
	if w == nil {
		return errors.New("srd: Window.UnmarshalJSON: nil *Window")
	}
	var in windowJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("srd: window JSON: %w", err)
	}
	r, err := in.coverageJSON.report()
	if err != nil {
		return fmt.Errorf("srd: window JSON: %w", err)
	}
	*w = Window{Phase: in.Phase, CoverageReport: r, Allowance: in.Allowance, LimitedBy: in.LimitedBy}
	return nil
}

// NewWindow compares two snapshots of one interface: SRD coverage (as
// Coverage does, nil snapshots included) and the allowance counters'
// deltas with the allowances that were hit. Snapshots of two interfaces
// have no deltas: the verdict is VerdictInconsistent and Allowance nil.
func NewWindow(before, after *ethtool.Snapshot) Window {
	w := Window{CoverageReport: Coverage(before, after), LimitedBy: []string{}}
	d, err := ethtool.Diff(before, after)
	if err != nil {
		return w
	}
	a, ok := d.Allowance()
	if !ok {
		return w
	}
	w.Allowance = &a
	w.LimitedBy = a.Exceeded()
	return w
}

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
