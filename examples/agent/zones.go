package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/runinfo"
)

// unknownZone is the zone label of an agent or a peer whose zone no
// source gave.
const unknownZone = "unknown"

// zoneMap is -zones: subnets and the zone each lies in (on EC2 every
// subnet lies in exactly one Availability Zone), longest prefix first.
// Safe for concurrent use (read-only once parsed).
type zoneMap []zoneEntry

type zoneEntry struct {
	net  netip.Prefix
	zone string
}

// parseZones reads -zones entries CIDR=zone ("10.0.0.0/20=us-west-2a").
// A subnet given twice is an error; nested subnets are allowed, the
// longest prefix wins.
func parseZones(entries []string) (zoneMap, error) {
	var z zoneMap
	seen := map[netip.Prefix]bool{}
	for _, e := range entries {
		cidr, zone, ok := strings.Cut(e, "=")
		p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
		zone = strings.TrimSpace(zone)
		switch {
		case !ok || zone == "":
			return nil, fmt.Errorf("-zones %q: want CIDR=zone", e)
		case err != nil:
			return nil, fmt.Errorf("-zones %q: %w", e, err)
		case seen[p.Masked()]:
			return nil, fmt.Errorf("-zones: subnet %s given twice", p.Masked())
		}
		seen[p.Masked()] = true
		z = append(z, zoneEntry{p.Masked(), zone})
	}
	slices.SortStableFunc(z, func(a, b zoneEntry) int { return b.net.Bits() - a.net.Bits() })
	return z, nil
}

// of is the zone of a peer's host: the zone of the longest -zones subnet
// holding its address, unknownZone for a name or an address in none.
func (z zoneMap) of(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return unknownZone
	}
	a = a.Unmap().WithZone("")
	for _, e := range z {
		if e.net.Contains(a) {
			return e.zone
		}
	}
	return unknownZone
}

// sourceZone is the agent's own zone: -zone when given (the manifests
// pass the pod's topology.kubernetes.io/zone label there), else, when
// -zones is set, the Availability Zone EC2's instance metadata service
// gives (through runinfo, within imdsTimeout), else unknownZone.
func sourceZone(ctx context.Context, flag string, zones zoneMap, imdsTimeout time.Duration) (zone, from string) {
	if flag != "" {
		return flag, "-zone"
	}
	if len(zones) == 0 {
		return unknownZone, "none"
	}
	md := runinfo.Collect(ctx, &runinfo.Config{IMDSTimeout: imdsTimeout})
	if md.EC2 != nil && md.EC2.AvailabilityZone != "" {
		return md.EC2.AvailabilityZone, "imds"
	}
	return unknownZone, "none: " + md.EC2Note
}
