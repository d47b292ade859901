package srd

import (
	"fmt"
	"strings"
)

// Mode is the ena_srd_mode bitmask the ENA driver reports.
type Mode uint64

// The bits of Mode. AWS documents values 0 to 3; ModeUDPOrderingBypass is in
// the driver's definitions but not in AWS's documentation.
const (
	// ModeExpress: ENA Express is enabled on the ENI.
	ModeExpress Mode = 1 << 0
	// ModeUDP: ENA Express is enabled for UDP too.
	ModeUDP Mode = 1 << 1
	// ModeUDPOrderingBypass: SRD does not restore the order of UDP packets.
	ModeUDPOrderingBypass Mode = 1 << 2

	knownBits = ModeExpress | ModeUDP | ModeUDPOrderingBypass
)

// Express reports whether ENA Express is on.
func (m Mode) Express() bool { return m&ModeExpress != 0 }

// UDP reports whether the UDP bit is set. UDP traffic uses SRD only when
// Express is on as well: mode 2 happens when Express was turned off after UDP
// had been configured.
func (m Mode) UDP() bool { return m&ModeUDP != 0 }

// unknown returns the bits this package does not know, kept as they were.
func (m Mode) unknown() Mode { return m &^ knownBits }

// String reads like "ENA Express on, UDP on", followed by the ordering bypass
// bit and any unknown bits when set.
func (m Mode) String() string {
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
	if m&ModeUDPOrderingBypass != 0 {
		parts = append(parts, "UDP ordering bypass on")
	}
	if u := m.unknown(); u != 0 {
		parts = append(parts, fmt.Sprintf("unknown bits %#x", uint64(u)))
	}
	return strings.Join(parts, ", ")
}
