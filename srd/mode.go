package srd

import (
	"fmt"
	"strings"
)

// ExpressMode is the ena_srd_mode bitmask the ENA driver reports: which
// parts of ENA Express are on.
type ExpressMode uint64

// The bits of ExpressMode. AWS documents values 0 to 3;
// expressUDPOrderingBypass is in the driver's definitions but not in AWS's
// documentation.
const (
	// expressEnabled: ENA Express is enabled on the ENI.
	expressEnabled ExpressMode = 1 << 0
	// expressUDP: ENA Express is enabled for UDP too.
	expressUDP ExpressMode = 1 << 1
	// expressUDPOrderingBypass: SRD does not restore the order of UDP
	// packets.
	expressUDPOrderingBypass ExpressMode = 1 << 2

	knownBits = expressEnabled | expressUDP | expressUDPOrderingBypass
)

// Express reports whether ENA Express is on.
func (m ExpressMode) Express() bool { return m&expressEnabled != 0 }

// UDP reports whether the UDP bit is set. UDP traffic uses SRD only when
// Express is on as well: mode 2 happens when Express was turned off after UDP
// had been configured.
func (m ExpressMode) UDP() bool { return m&expressUDP != 0 }

// unknown returns the bits this package does not know, kept as they were.
func (m ExpressMode) unknown() ExpressMode { return m &^ knownBits }

// String reads like "ENA Express on, UDP on", followed by the ordering bypass
// bit and any unknown bits when set.
func (m ExpressMode) String() string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	parts := []string{"ENA Express " + onOff(m.Express()), "UDP " + onOff(m.UDP())}
	if m.UDP() && !m.Express() {
		parts[1] += " (inactive while ENA Express is off)"
	}
	if m&expressUDPOrderingBypass != 0 {
		parts = append(parts, "UDP ordering bypass on")
	}
	if u := m.unknown(); u != 0 {
		parts = append(parts, fmt.Sprintf("unknown bits %#x", uint64(u)))
	}
	return strings.Join(parts, ", ")
}
