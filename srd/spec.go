package srd

import (
	"fmt"
	"strings"
)

// findByMAC returns the network interface whose MAC address is mac (case
// and separators as EC2 and /sys/class/net print them: lower-case, colons),
// or nil.
func findByMAC(nis []NetworkInterface, mac string) *NetworkInterface {
	mac = strings.ToLower(strings.TrimSpace(mac))
	for i := range nis {
		if strings.ToLower(nis[i].MACAddress) == mac && mac != "" {
			return &nis[i]
		}
	}
	return nil
}

const specCheckName = "EnaSrdSpecification vs ena_srd_mode"

// SpecCheck compares what EC2 says of the ENI in nis whose MAC address is
// mac (its EnaSrdSpecification; the MAC as /sys/class/net/IFACE/address
// holds it, in any case, surrounding space ignored) with what the driver
// reports (ena_srd_mode, the Mode of a coverage report r): ENA Express and
// its UDP setting must agree. A mismatch means the attachment changed and
// the driver has not caught up, or the snapshot is not of this ENI. No ENI
// with that MAC, one without a specification, and a report without SRD
// statistics give a warn check that says why. (With only a mode at hand,
// pass CoverageReport{Mode: mode}.)
func SpecCheck(nis []NetworkInterface, mac string, r CoverageReport) Check {
	ni := findByMAC(nis, mac)
	if r.Verdict == VerdictNoStatistics {
		return Check{Name: specCheckName, Value: "no ena_srd_mode", Expect: "ENA statistics with SRD information",
			Status: StatusWarn, Detail: r.Reason}
	}
	return specCheckMode(ni, r.Mode)
}

func specCheckMode(ni *NetworkInterface, mode ExpressMode) Check {
	c := Check{Name: specCheckName, Value: fmt.Sprintf("%d (%s)", uint64(mode), mode)}
	switch {
	case ni == nil:
		c.Expect, c.Status = "an ENI with this MAC address", StatusWarn
		c.Detail = "no network interface in the EC2 output has this MAC address"
		return c
	case ni.EnaSrd == nil:
		c.Expect, c.Status = "an attachment with EnaSrdSpecification", StatusWarn
		c.Detail = ni.ID + " has no EnaSrdSpecification under Attachment"
		return c
	}
	want := *ni.EnaSrd
	c.Expect = fmt.Sprintf("%d (%s) as %s's EnaSrdSpecification says", uint64(want), want, ni.ID)
	got := mode & (expressEnabled | expressUDP)
	switch {
	case got == want:
		c.Status = StatusPass
	case !want.Express():
		// UDP left on in the driver after Express was turned off is what
		// the driver reports as mode 2; that is not a mismatch.
		if got.Express() {
			c.Status, c.Detail = StatusFail, "EC2 says ENA Express is off but the driver has it on"
		} else {
			c.Status = StatusPass
		}
	default:
		c.Status = StatusFail
		c.Detail = "the driver does not report what EC2 configured: check the ENI attachment, or wait for the change to reach the instance"
	}
	return c
}
