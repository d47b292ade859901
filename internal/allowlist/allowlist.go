// Package allowlist is the client allow-list that the throughput and
// latency servers share: prefixes checked and normalized once, and each
// peer's address reduced to the form the prefixes are written in.
package allowlist

import (
	"fmt"
	"net"
	"net/netip"
)

// Normalize checks an allow-list and returns a copy with IPv4-mapped IPv6
// prefixes turned into the IPv4 prefixes they mean (PeerIP unmaps client
// addresses) and host bits masked. It returns nil for an empty list.
func Normalize(in []netip.Prefix) ([]netip.Prefix, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]netip.Prefix, 0, len(in))
	for _, p := range in {
		if !p.IsValid() {
			return nil, fmt.Errorf("AllowedClients has an invalid prefix %q", p)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// PeerIP is the IP address of a peer, unmapped from IPv4-in-IPv6 and
// without zone (a prefix never contains an address with one); ok is false
// for peers without an IP address (unix sockets, unnamed or unknown peers).
func PeerIP(a net.Addr) (ip netip.Addr, ok bool) {
	switch a := a.(type) {
	case nil:
		return netip.Addr{}, false
	case *net.TCPAddr:
		if a == nil {
			return netip.Addr{}, false
		}
		ip, ok = netip.AddrFromSlice(a.IP)
	case *net.UDPAddr:
		if a == nil {
			return netip.Addr{}, false
		}
		ip, ok = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}, false
		}
		ip, ok = ap.Addr(), true
	}
	return ip.Unmap().WithZone(""), ok
}

// Admits reports whether a normalized allow-list lets a peer in: always
// with an empty list, never for a peer without an IP address.
func Admits(list []netip.Prefix, ip netip.Addr, ok bool) bool {
	if len(list) == 0 {
		return true
	}
	if !ok {
		return false
	}
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
