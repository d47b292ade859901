package latency

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// ErrAccessDenied is reported to ServerConfig.OnFailure for a connection
// closed, or a datagram dropped, because its client is not in
// ServerConfig.AllowedClients.
var ErrAccessDenied = errors.New("latency: server: client not in AllowedClients")

// How often OnFailure hears of datagrams from outside the allow-list: once
// per source address and window, and at most deniedMaxSources sources per
// window, so that a flood (spoofed sources included) costs a map lookup per
// datagram and never makes the hook the bottleneck.
const (
	deniedWindow     = time.Minute
	deniedMaxSources = 1024
)

// normalizePrefixes checks an allow-list and returns a copy with IPv4-mapped
// IPv6 prefixes turned into the IPv4 prefixes they mean (client addresses
// are unmapped before the check) and host bits masked.
func normalizePrefixes(in []netip.Prefix) ([]netip.Prefix, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]netip.Prefix, 0, len(in))
	for _, p := range in {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: AllowedClients has an invalid prefix %q", ErrInvalidConfig, p)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// peerIP is the IP address of a peer, unmapped from IPv4-in-IPv6 and
// without zone; ok is false for peers without one (unix sockets, unnamed
// or unknown peers).
func peerIP(a net.Addr) (ip netip.Addr, ok bool) {
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

// admits reports whether the allow-list lets a peer in: always without an
// allow-list, never for a peer without an IP address.
func (s *Server) admits(ip netip.Addr, ok bool) bool {
	if len(s.cfg.AllowedClients) == 0 {
		return true
	}
	if !ok {
		return false
	}
	for _, p := range s.cfg.AllowedClients {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// denyConn closes a stream connection from outside the allow-list before
// reading anything, counts and reports it.
func (s *Server) denyConn(c net.Conn) {
	remote := c.RemoteAddr()
	_ = c.Close()
	s.denied.Add(1)
	s.report(remote, fmt.Errorf("%w: connection from %v", ErrAccessDenied, remote))
}

// deniedSources remembers the sources outside the allow-list that one
// ServePacket call has reported in the current window. It is used by that
// call's goroutine only.
type deniedSources struct {
	start time.Time
	seen  map[netip.Addr]struct{}
}

// first reports whether ip (the zero Addr for sources without one) is to be
// reported now, and remembers it for the rest of the window.
func (d *deniedSources) first(ip netip.Addr, now time.Time) bool {
	if d.seen == nil || now.Sub(d.start) >= deniedWindow || now.Before(d.start) {
		d.start = now
		if d.seen == nil {
			d.seen = make(map[netip.Addr]struct{})
		}
		clear(d.seen)
	}
	if _, dup := d.seen[ip]; dup || len(d.seen) >= deniedMaxSources {
		return false
	}
	d.seen[ip] = struct{}{}
	return true
}
