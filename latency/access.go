package latency

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/netperfkit/netperfkit/internal/allowlist"
)

// ErrAccessDenied is reported to ServerConfig.OnFailure for a connection
// closed, or a datagram dropped, because its client is not in
// ServerConfig.AllowedClients, and for a connection closed because
// ServerConfig.MaxConns were open ("too many connections").
var ErrAccessDenied = errors.New("latency: server: client not in AllowedClients")

// How often OnFailure hears of datagrams from outside the allow-list: once
// per source address and window, and at most deniedMaxSources sources per
// window, so that a flood (spoofed sources included) costs a map lookup per
// datagram and never makes the hook the bottleneck.
const (
	deniedWindow     = time.Minute
	deniedMaxSources = 1024
)

// admits reports whether the allow-list lets a peer in: always without an
// allow-list, never for a peer without an IP address.
func (s *Server) admits(ip netip.Addr, ok bool) bool {
	return allowlist.Admits(s.cfg.AllowedClients, ip, ok)
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
