package srd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
)

// minCoverage is the share of eligible packets SRD must carry for Coverage to
// say SRD carried the traffic. The field study saw more than 0.99999.
const minCoverage = 0.999

// Verdict is Coverage's conclusion.
type Verdict string

// The verdicts of Coverage.
const (
	// VerdictCarried: SRD carried at least 99.9% of the eligible packets.
	VerdictCarried Verdict = "srd_carried_traffic"
	// VerdictPartialFallback: some eligible packets went over plain ENA.
	VerdictPartialFallback Verdict = "partial_fallback"
	// VerdictDisabled: ena_srd_mode says ENA Express is off, and it was
	// not switched off during a window with eligible traffic (that window
	// is judged; see Coverage).
	VerdictDisabled Verdict = "srd_disabled"
	// VerdictCountersReset: an SRD counter went backwards between the
	// snapshots (reboot, stop/start or ENI reattach), so no delta exists.
	VerdictCountersReset Verdict = "counters_reset"
	// VerdictNoStatistics: a snapshot has no ena_srd_* statistics (not
	// ENA, driver older than 2.8, or the device does not report SRD).
	VerdictNoStatistics Verdict = "no_srd_statistics"
	// VerdictNoTraffic: ENA Express is on but no eligible packet was sent
	// in the window, so there is nothing to judge.
	VerdictNoTraffic Verdict = "no_eligible_traffic"
	// VerdictInconsistent: the snapshots name two different interfaces,
	// or ena_srd_tx_pkts grew more than ena_srd_eligible_tx_pkts, which
	// cannot happen within one interface (every packet sent over SRD is
	// eligible): the snapshots are mixed up (another interface or
	// instance, or edited), so there is no coverage to judge.
	VerdictInconsistent Verdict = "inconsistent_counters"
)

// CoverageReport is how much of the eligible traffic SRD carried over a
// window. Its JSON carries the window in seconds ("window_seconds") and,
// beside "srd_mode", the mode read out ("srd_mode_text", "" without SRD
// statistics; "express_enabled"; "udp_enabled", set only when ENA Express
// is on as well).
type CoverageReport struct {
	Interface string
	// Duration is the window's length; 0 when either snapshot carries no
	// time.
	Duration time.Duration
	// Mode is ena_srd_mode at the end of the window.
	Mode ExpressMode
	// ModeChanged is set when ena_srd_mode differs between the snapshots.
	ModeChanged         bool
	TxPktsDelta         uint64
	EligibleTxPktsDelta uint64
	RxPktsDelta         uint64
	// FallbackPkts is eligible minus tx: packets that could have used SRD
	// and went over plain ENA.
	FallbackPkts uint64
	// Coverage is TxPktsDelta / EligibleTxPktsDelta, at most 1; 0 when
	// nothing was eligible or the counters are inconsistent.
	Coverage float64
	// ResourceUtilizationPercent is ena_srd_resource_utilization at the
	// start and end of the window.
	ResourceUtilizationBeforePercent uint64
	ResourceUtilizationPercent       uint64
	Verdict                          Verdict
	Reason                           string
}

// coverageJSON is CoverageReport's JSON shape.
type coverageJSON struct {
	Interface                        string      `json:"interface"`
	WindowSeconds                    float64     `json:"window_seconds"`
	Mode                             ExpressMode `json:"srd_mode"`
	ModeText                         string      `json:"srd_mode_text"`
	ExpressEnabled                   bool        `json:"express_enabled"`
	UDPEnabled                       bool        `json:"udp_enabled"`
	ModeChanged                      bool        `json:"mode_changed,omitempty"`
	TxPktsDelta                      uint64      `json:"tx_pkts_delta"`
	EligibleTxPktsDelta              uint64      `json:"eligible_tx_pkts_delta"`
	RxPktsDelta                      uint64      `json:"rx_pkts_delta"`
	FallbackPkts                     uint64      `json:"fallback_pkts"`
	Coverage                         float64     `json:"coverage"`
	ResourceUtilizationBeforePercent uint64      `json:"resource_utilization_before_percent"`
	ResourceUtilizationPercent       uint64      `json:"resource_utilization_percent"`
	Verdict                          Verdict     `json:"verdict"`
	Reason                           string      `json:"reason"`
}

func (r CoverageReport) wire() coverageJSON {
	w := coverageJSON{
		Interface: r.Interface, WindowSeconds: r.Duration.Seconds(), Mode: r.Mode,
		ExpressEnabled: r.Mode.Express(), UDPEnabled: r.Mode.Express() && r.Mode.UDP(),
		ModeChanged: r.ModeChanged, TxPktsDelta: r.TxPktsDelta, EligibleTxPktsDelta: r.EligibleTxPktsDelta,
		RxPktsDelta: r.RxPktsDelta, FallbackPkts: r.FallbackPkts, Coverage: r.Coverage,
		ResourceUtilizationBeforePercent: r.ResourceUtilizationBeforePercent,
		ResourceUtilizationPercent:       r.ResourceUtilizationPercent, Verdict: r.Verdict, Reason: r.Reason,
	}
	// Without SRD statistics there is no mode to read out.
	if r.Verdict != VerdictNoStatistics && r.Verdict != "" {
		w.ModeText = r.Mode.String()
	}
	return w
}

func (w coverageJSON) report() (CoverageReport, error) {
	d, err := secondsDuration(w.WindowSeconds)
	if err != nil {
		return CoverageReport{}, fmt.Errorf("window_seconds: %w", err)
	}
	return CoverageReport{
		Interface: w.Interface, Duration: d, Mode: w.Mode, ModeChanged: w.ModeChanged,
		TxPktsDelta: w.TxPktsDelta, EligibleTxPktsDelta: w.EligibleTxPktsDelta, RxPktsDelta: w.RxPktsDelta,
		FallbackPkts: w.FallbackPkts, Coverage: w.Coverage,
		ResourceUtilizationBeforePercent: w.ResourceUtilizationBeforePercent,
		ResourceUtilizationPercent:       w.ResourceUtilizationPercent, Verdict: w.Verdict, Reason: w.Reason,
	}, nil
}

// MarshalJSON writes the report with its window in seconds and its mode
// read out (see CoverageReport).
func (r CoverageReport) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// UnmarshalJSON reads what MarshalJSON writes; the read-out mode fields are
// derived from "srd_mode" and ignored.
func (r *CoverageReport) UnmarshalJSON(data []byte) error {
	if r == nil {
		return errors.New("srd: CoverageReport.UnmarshalJSON: nil *CoverageReport")
	}
	var w coverageJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("srd: coverage JSON: %w", err)
	}
	out, err := w.report()
	if err != nil {
		return fmt.Errorf("srd: coverage JSON: %w", err)
	}
	*r = out
	return nil
}

// secondsDuration converts a JSON number of seconds into a Duration,
// refusing what a Duration cannot hold.
func secondsDuration(s float64) (time.Duration, error) {
	ns := math.Round(s * 1e9)
	if math.IsNaN(ns) || ns > math.MaxInt64 || ns < math.MinInt64 {
		return 0, fmt.Errorf("%v out of range", s)
	}
	return time.Duration(ns), nil
}

// srdCounters are the ENA Express counters of one snapshot.
type srdCounters struct {
	mode                      ExpressMode
	tx, eligible, rx, utilPct uint64
}

// readSRD reads the SRD counters of s. ok is false unless s has both
// packet counters: a missing eligible counter would read as no eligible
// traffic.
func readSRD(s ethtool.Stats) (c srdCounters, ok bool) {
	var hasTx, hasEligible bool
	c.tx, hasTx = s.Get("ena_srd_tx_pkts")
	c.eligible, hasEligible = s.Get("ena_srd_eligible_tx_pkts")
	if !hasTx || !hasEligible {
		return srdCounters{}, false
	}
	mode, _ := s.Get("ena_srd_mode")
	c.mode = ExpressMode(mode)
	c.rx, _ = s.Get("ena_srd_rx_pkts")
	c.utilPct, _ = s.Get("ena_srd_resource_utilization")
	return c, true
}

// Coverage compares the SRD counters of two snapshots of one interface and
// says whether SRD carried the eligible traffic of the window, and if not,
// why.
//
// When ena_srd_mode changed during the window (ModeChanged) and packets were
// eligible, the verdict judges the window's coverage
// (VerdictCarried or VerdictPartialFallback) whatever the mode at its end, and
// Reason says how the mode changed (and that ENA Express is off now, if it
// is): the window's traffic was sent partly under each mode. Without a
// change, or without eligible packets, a mode with ENA Express off gives
// VerdictDisabled.
//
// A nil snapshot reads as one without statistics: the verdict is then
// VerdictNoStatistics, with a Reason that names the nil snapshot. Snapshots
// that name two different interfaces give VerdictInconsistent, with a
// Reason that names both (a snapshot parsed from text names none).
func Coverage(before, after *ethtool.Snapshot) CoverageReport {
	nilNote := nilSnapshots(before, after)
	if before == nil {
		before = &ethtool.Snapshot{}
	}
	if after == nil {
		after = &ethtool.Snapshot{}
	}
	r := CoverageReport{Interface: after.Interface}
	if r.Interface == "" {
		r.Interface = before.Interface
	}
	if !before.Time.IsZero() && !after.Time.IsZero() {
		r.Duration = after.Time.Sub(before.Time)
	}
	if before.Interface != "" && after.Interface != "" && before.Interface != after.Interface {
		r.Verdict = VerdictInconsistent
		r.Reason = fmt.Sprintf("the snapshots are of two interfaces, before of %q and after of %q: no delta exists; take both snapshots of one interface", before.Interface, after.Interface)
		return r
	}
	b, okB := readSRD(before.Stats)
	a, okA := readSRD(after.Stats)
	if !okB || !okA {
		which := "either snapshot"
		switch {
		case okA:
			which = "the first snapshot"
		case okB:
			which = "the second snapshot"
		}
		r.Verdict = VerdictNoStatistics
		r.Reason = "no ena_srd_* statistics in " + which + nilNote + ": not an ENA interface, an ENA driver older than 2.8.0, or a device that does not report SRD information"
		return r
	}
	r.Mode = a.mode
	r.ModeChanged = a.mode != b.mode
	r.ResourceUtilizationBeforePercent = b.utilPct
	r.ResourceUtilizationPercent = a.utilPct

	var reset []string
	for _, c := range []struct {
		name          string
		before, after uint64
		delta         *uint64
	}{
		{"ena_srd_tx_pkts", b.tx, a.tx, &r.TxPktsDelta},
		{"ena_srd_eligible_tx_pkts", b.eligible, a.eligible, &r.EligibleTxPktsDelta},
		{"ena_srd_rx_pkts", b.rx, a.rx, &r.RxPktsDelta},
	} {
		if c.after < c.before {
			reset = append(reset, c.name)
			continue
		}
		*c.delta = c.after - c.before
	}
	if len(reset) > 0 {
		r.TxPktsDelta, r.EligibleTxPktsDelta, r.RxPktsDelta = 0, 0, 0
		r.Verdict = VerdictCountersReset
		r.Reason = strings.Join(reset, ", ") + " went backwards: the counters were reset between the snapshots (reboot, stop/start or ENI detach); take both snapshots again"
		return r
	}
	if r.TxPktsDelta > r.EligibleTxPktsDelta {
		r.Verdict = VerdictInconsistent
		r.Reason = fmt.Sprintf("ena_srd_tx_pkts grew by %d but ena_srd_eligible_tx_pkts only by %d, though every packet sent over SRD is eligible: the snapshots are not of one interface in order (mixed up or edited); take both snapshots again", r.TxPktsDelta, r.EligibleTxPktsDelta)
		return r
	}
	r.FallbackPkts = r.EligibleTxPktsDelta - r.TxPktsDelta
	if r.EligibleTxPktsDelta > 0 {
		r.Coverage = float64(r.TxPktsDelta) / float64(r.EligibleTxPktsDelta)
	}
	r.judge(b.mode)
	return r
}

// nilSnapshots names the nil snapshots for a Reason, "" when none is.
func nilSnapshots(before, after *ethtool.Snapshot) string {
	switch {
	case before == nil && after == nil:
		return " (both snapshots are nil)"
	case before == nil:
		return " (the first snapshot, before, is nil)"
	case after == nil:
		return " (the second snapshot, after, is nil)"
	}
	return ""
}

// judge sets the verdict of a window whose deltas are known; from is the
// mode at the window's start.
func (r *CoverageReport) judge(from ExpressMode) {
	express := r.Mode.Express()
	modeChange := ""
	if r.ModeChanged {
		modeChange = fmt.Sprintf("ena_srd_mode changed from %d (%s) to %d (%s) during the window", uint64(from), from, uint64(r.Mode), r.Mode)
		if !express {
			modeChange += ", so ENA Express is off now"
		}
	}
	switch {
	case !express && (!r.ModeChanged || r.EligibleTxPktsDelta == 0):
		r.Verdict = VerdictDisabled
		r.Reason = fmt.Sprintf("ena_srd_mode is %d (%s): enable ENA Express on the ENI attachment (EnaSrdSpecification) of both instances", uint64(r.Mode), r.Mode)
	case r.EligibleTxPktsDelta == 0:
		r.Verdict = VerdictNoTraffic
		r.Reason = "no packet eligible for SRD was sent in the window: send TCP (or UDP with ENA Express UDP on) to a peer with ENA Express in the same region"
	case r.Coverage >= minCoverage:
		r.Verdict = VerdictCarried
		r.Reason = fmt.Sprintf("SRD carried %d of %d eligible packets (%s%%)", r.TxPktsDelta, r.EligibleTxPktsDelta, coveragePercent(r.TxPktsDelta, r.EligibleTxPktsDelta))
		if modeChange != "" {
			r.Reason += "; " + modeChange
		}
	default:
		r.Verdict = VerdictPartialFallback
		// Below minCoverage the fallback share is at least 0.1%: three
		// decimals show it.
		r.Reason = fmt.Sprintf("%d of %d eligible packets (%.3f%%) fell back to plain ENA", r.FallbackPkts, r.EligibleTxPktsDelta, 100*(1-r.Coverage)) + fallbackCause(*r, modeChange)
	}
}

// fallbackCause names the likely cause of a fallback; modeChange, when not
// empty, says how ena_srd_mode changed in the window.
func fallbackCause(r CoverageReport, modeChange string) string {
	if r.ResourceUtilizationPercent >= ethtool.SRDUtilizationHigh || r.ResourceUtilizationBeforePercent >= ethtool.SRDUtilizationHigh {
		cause := fmt.Sprintf(": SRD resources are %d%% used, so SRD ran out of connection memory", max(r.ResourceUtilizationPercent, r.ResourceUtilizationBeforePercent))
		if modeChange != "" {
			cause += "; " + modeChange
		}
		return cause
	}
	if modeChange != "" {
		return ": " + modeChange
	}
	return ": likely packets larger than the SRD MTU of 8900, a peer without ENA Express, or a live update"
}

// String is a short human-readable summary. It starts with the interface's
// name when the report has one (a snapshot parsed from text has none).
func (r CoverageReport) String() string {
	s := fmt.Sprintf("%s; ena_srd_mode %d (%s); tx +%d, eligible +%d, rx +%d; coverage %.6f; %s",
		r.Verdict, uint64(r.Mode), r.wire().ModeText, r.TxPktsDelta, r.EligibleTxPktsDelta, r.RxPktsDelta, r.Coverage, r.Reason)
	if r.Interface == "" {
		return s
	}
	return r.Interface + ": " + s
}
