package srd

import (
	"fmt"
	"strings"

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
	// VerdictInconsistent: ena_srd_tx_pkts grew more than
	// ena_srd_eligible_tx_pkts, which cannot happen within one interface
	// (every packet sent over SRD is eligible): the snapshots are mixed up
	// (another interface or instance, or edited), so there is no coverage
	// to judge.
	VerdictInconsistent Verdict = "inconsistent_counters"
)

// CoverageReport is how much of the eligible traffic SRD carried over a
// window.
type CoverageReport struct {
	Interface     string  `json:"interface"`
	WindowSeconds float64 `json:"window_seconds"`
	// Mode is ena_srd_mode at the end of the window.
	Mode           Mode   `json:"srd_mode"`
	ModeText       string `json:"srd_mode_text"`
	ExpressEnabled bool   `json:"express_enabled"`
	UDPEnabled     bool   `json:"udp_enabled"`
	// ModeChanged is set when ena_srd_mode differs between the snapshots.
	ModeChanged         bool   `json:"mode_changed,omitempty"`
	TxPktsDelta         uint64 `json:"tx_pkts_delta"`
	EligibleTxPktsDelta uint64 `json:"eligible_tx_pkts_delta"`
	RxPktsDelta         uint64 `json:"rx_pkts_delta"`
	// FallbackPkts is eligible minus tx: packets that could have used SRD
	// and went over plain ENA.
	FallbackPkts uint64 `json:"fallback_pkts"`
	// Coverage is TxPktsDelta / EligibleTxPktsDelta, at most 1; 0 when
	// nothing was eligible or the counters are inconsistent.
	Coverage float64 `json:"coverage"`
	// ResourceUtilizationPercent is ena_srd_resource_utilization at the
	// start and end of the window.
	ResourceUtilizationBeforePercent uint64  `json:"resource_utilization_before_percent"`
	ResourceUtilizationPercent       uint64  `json:"resource_utilization_percent"`
	Verdict                          Verdict `json:"verdict"`
	Reason                           string  `json:"reason"`
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
func Coverage(before, after *ethtool.Snapshot) CoverageReport {
	r := CoverageReport{Interface: after.Interface}
	if r.Interface == "" {
		r.Interface = before.Interface
	}
	if !before.Time.IsZero() && !after.Time.IsZero() {
		r.WindowSeconds = after.Time.Sub(before.Time).Seconds()
	}
	// NewENA sets SRD only for statistics it recognises as ENA's.
	eb, _ := ethtool.NewENA(before.Stats)
	ea, _ := ethtool.NewENA(after.Stats)
	if eb.SRD == nil || ea.SRD == nil {
		which := "either snapshot"
		switch {
		case ea.SRD != nil:
			which = "the first snapshot"
		case eb.SRD != nil:
			which = "the second snapshot"
		}
		r.Verdict = VerdictNoStatistics
		r.Reason = "no ena_srd_* statistics in " + which + ": not an ENA interface, an ENA driver older than 2.8.0, or a device that does not report SRD information"
		return r
	}
	b, a := eb.SRD, ea.SRD
	r.Mode = Mode(a.Mode)
	r.ModeText = r.Mode.String()
	r.ExpressEnabled = r.Mode.Express()
	r.UDPEnabled = r.ExpressEnabled && r.Mode.UDP()
	r.ModeChanged = a.Mode != b.Mode
	r.ResourceUtilizationBeforePercent = b.ResourceUtilization
	r.ResourceUtilizationPercent = a.ResourceUtilization

	var reset []string
	for _, c := range []struct {
		name          string
		before, after uint64
		delta         *uint64
	}{
		{"ena_srd_tx_pkts", b.TxPkts, a.TxPkts, &r.TxPktsDelta},
		{"ena_srd_eligible_tx_pkts", b.EligibleTxPkts, a.EligibleTxPkts, &r.EligibleTxPktsDelta},
		{"ena_srd_rx_pkts", b.RxPkts, a.RxPkts, &r.RxPktsDelta},
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
	r.judge(Mode(b.Mode))
	return r
}

// judge sets the verdict of a window whose deltas are known; from is the
// mode at the window's start.
func (r *CoverageReport) judge(from Mode) {
	modeChange := ""
	if r.ModeChanged {
		modeChange = fmt.Sprintf("ena_srd_mode changed from %d (%s) to %d (%s) during the window", uint64(from), from, uint64(r.Mode), r.ModeText)
		if !r.ExpressEnabled {
			modeChange += ", so ENA Express is off now"
		}
	}
	switch {
	case !r.ExpressEnabled && (!r.ModeChanged || r.EligibleTxPktsDelta == 0):
		r.Verdict = VerdictDisabled
		r.Reason = fmt.Sprintf("ena_srd_mode is %d (%s): enable ENA Express on the ENI attachment (EnaSrdSpecification) of both instances", uint64(r.Mode), r.ModeText)
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

// String is a short human-readable summary.
func (r CoverageReport) String() string {
	return fmt.Sprintf("%s: %s; ena_srd_mode %d (%s); tx +%d, eligible +%d, rx +%d; coverage %.6f; %s",
		r.Interface, r.Verdict, uint64(r.Mode), r.ModeText, r.TxPktsDelta, r.EligibleTxPktsDelta, r.RxPktsDelta, r.Coverage, r.Reason)
}
