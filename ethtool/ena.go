package ethtool

import (
	"fmt"
)

// ENA stat names used by the typed view and the explanations.
const (
	statBWIn          = "bw_in_allowance_exceeded"
	statBWOut         = "bw_out_allowance_exceeded"
	statPPS           = "pps_allowance_exceeded"
	statConntrack     = "conntrack_allowance_exceeded"
	statLinklocal     = "linklocal_allowance_exceeded"
	statConntrackAvl  = "conntrack_allowance_available"
	statSRDMode       = "ena_srd_mode"
	statSRDTx         = "ena_srd_tx_pkts"
	statSRDEligibleTx = "ena_srd_eligible_tx_pkts"
	statSRDRx         = "ena_srd_rx_pkts"
	statSRDUtil       = "ena_srd_resource_utilization"
	statTotalResets   = "total_resets"
)

// The severities of findings (Finding.Severity), from least to most urgent.
const (
	severityInfo     = "info"
	severityWarning  = "warning"
	severityCritical = "critical"
)

// Finding is one plain-language reading of a counter's change. Its
// Severity is "info", "warning" or "critical", from least to most urgent.
type Finding struct {
	Counter  string `json:"counter"`
	Increase uint64 `json:"increase"`
	Severity string `json:"severity"`
	Meaning  string `json:"meaning"`
}

// String reads like "pps_allowance_exceeded +1234: packets were shaped by the
// PPS allowance".
func (f Finding) String() string {
	if f.Increase == 0 {
		return fmt.Sprintf("%s: %s", f.Counter, f.Meaning)
	}
	return fmt.Sprintf("%s +%d: %s", f.Counter, f.Increase, f.Meaning)
}

// counterMeanings says what an increase of an ENA counter means, in the
// order findings are reported.
var counterMeanings = []struct {
	name     string
	severity string
	meaning  string
}{
	{statBWIn, severityWarning, "packets were queued or dropped because inbound aggregate bandwidth exceeded the instance's allowance"},
	{statBWOut, severityWarning, "packets were queued or dropped because outbound aggregate bandwidth exceeded the instance's allowance"},
	{statPPS, severityWarning, "packets were shaped by the PPS allowance (bidirectional packets per second above the instance's limit)"},
	{statConntrack, severityCritical, "packets were dropped because connection tracking reached the instance's maximum of tracked connections"},
	{statLinklocal, severityWarning, "packets to link-local services (Route 53 Resolver DNS, instance metadata, Time Sync) were dropped by their PPS limit"},
	{statTotalResets, severityCritical, "the driver reset the device; other counters may have restarted from zero"},
	{"reset_fail", severityCritical, "a device reset failed"},
	{"tx_timeout", severityCritical, "a transmit queue stalled and the kernel's netdev watchdog fired"},
	{"wd_expired", severityCritical, "the device's keep-alive watchdog expired (the device stopped answering)"},
	{"missing_tx_cmpl", severityWarning, "transmit completions arrived late or not at all"},
	{"missing_intr", severityWarning, "interrupts were missed and the driver had to poll"},
	{"bad_tx_req_id", severityWarning, "the device completed an unknown transmit request"},
	{"bad_rx_req_id", severityWarning, "the device returned an unknown receive buffer"},
	{"bad_rx_desc_num", severityWarning, "the device returned a receive descriptor count that is out of range"},
	{"device_request_reset", severityWarning, "the device asked the driver to reset it"},
	{"admin_to", severityWarning, "admin queue commands timed out"},
	{"admin_q_pause", severityInfo, "the admin queue was paused"},
}

// SRDUtilizationHigh is the SRD resource utilisation, in percent, from which
// fallback to plain ENA becomes likely.
const SRDUtilizationHigh = 80

// Explain reads the change of ENA's counters in d in plain language: every
// allowance counter that grew, the SRD traffic that fell back to plain ENA,
// high SRD resource use, shrinking conntrack headroom, resets and timeouts,
// and counters that went backwards. It returns nil when nothing of note
// happened, and for a nil d.
func Explain(d *Delta) []Finding {
	if d == nil {
		return nil
	}
	var out []Finding
	for _, cm := range counterMeanings {
		if c, ok := d.Get(cm.name); ok && c.Increase > 0 {
			out = append(out, Finding{Counter: cm.name, Increase: c.Increase, Severity: cm.severity, Meaning: cm.meaning})
		}
	}
	tx, okTx := d.Get(statSRDTx)
	el, okEl := d.Get(statSRDEligibleTx)
	if okTx && okEl && !tx.Reset && !el.Reset && el.Increase > tx.Increase {
		out = append(out, Finding{
			Counter: statSRDEligibleTx, Increase: el.Increase - tx.Increase, Severity: severityWarning,
			Meaning: fmt.Sprintf("packets could have used ENA Express (SRD) but went over plain ENA (%d of %d eligible went over SRD)", tx.Increase, el.Increase),
		})
	}
	if u, ok := d.Get(statSRDUtil); ok && u.After >= SRDUtilizationHigh {
		out = append(out, Finding{
			Counter: statSRDUtil, Severity: severityWarning,
			Meaning: fmt.Sprintf("SRD connection resources are %d%% used; near 100%% traffic falls back to plain ENA", u.After),
		})
	}
	if c, ok := d.Get(statConntrackAvl); ok && c.After < c.Before {
		out = append(out, Finding{
			Counter: statConntrackAvl, Severity: severityInfo,
			Meaning: fmt.Sprintf("room for tracked connections fell from %d to %d", c.Before, c.After),
		})
	}
	const why = "the counter was reset (driver reset, reboot or ENI reattach) between the snapshots"
	if d.Resets > 3 {
		out = append(out, Finding{
			Counter: fmt.Sprintf("%d counters", d.Resets), Severity: severityWarning,
			Meaning: "went backwards: " + why,
		})
		return out
	}
	for _, c := range d.Counters {
		if c.Reset {
			out = append(out, Finding{
				Counter: c.Name, Severity: severityWarning,
				Meaning: fmt.Sprintf("went backwards from %d to %d: %s", c.Before, c.After, why),
			})
		}
	}
	return out
}
