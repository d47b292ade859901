package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// lookuper is the part of net.Resolver that peer discovery uses; tests
// replace it.
type lookuper interface {
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dnsPeers finds peers behind one DNS name (-peers-dns): the addresses of
// its SRV targets when it has SRV records (each target's port is its
// sockperf port), else its A and AAAA records. The agent's own addresses
// are left out. Safe for use by one goroutine at a time.
type dnsPeers struct {
	name      string // the name looked up
	iperfPort int    // ports of the peers found (SRV replaces sockperfPort)
	sockPort  int
	res       lookuper
	own       func() ([]netip.Addr, error) // the host's addresses
	// self is the own address the last answer held, the agent's place in
	// the fleet's ordered list (see topology); invalid when none was.
	self netip.Addr
	// srvErr is the last SRV failure that lookup fell back to the A/AAAA
	// records for, nil while SRV queries are answered; srvNoted is set
	// once the resolve loop logged one, so a resolver that never answers
	// SRV is logged once, not every period.
	srvErr   error
	srvNoted bool
	// viaSRV is true when the last good answer came from SRV records.
	viaSRV bool
}

// newDNSPeers reads -peers-dns's NAME[:iperf3port[:sockperfport]].
func newDNSPeers(spec string, iperfPort, sockPort int, res lookuper) (*dnsPeers, error) {
	p, err := parsePeer(spec, iperfPort, sockPort)
	if err != nil {
		return nil, fmt.Errorf("-peers-dns: %w", err)
	}
	return &dnsPeers{name: p.Host, iperfPort: p.IperfPort, sockPort: p.SockperfPort, res: res, own: ownAddrs}, nil
}

// lookup resolves the name once. A failed SRV query falls back to the A
// and AAAA records (and sets srvErr), unless the last good answer came
// from SRV records and the failure may pass (a timeout, SERVFAIL). A
// failure of the A/AAAA lookup itself is an error and the caller keeps
// its last set; a name without records gives no peers and no error.
func (d *dnsPeers) lookup(ctx context.Context) ([]peer, error) {
	own, err := d.own()
	if err != nil {
		return nil, fmt.Errorf("own addresses: %w", err)
	}
	type target struct {
		host string
		port int
	}
	targets := []target{{d.name, d.sockPort}}
	_, srvs, err := d.res.LookupSRV(ctx, "", "", d.name)
	switch {
	case err == nil && len(srvs) > 0:
		targets = targets[:0]
		for _, s := range srvs {
			targets = append(targets, target{s.Target, int(s.Port)})
		}
	case err != nil && !notFound(err) && (d.viaSRV && temporary(err) || ctx.Err() != nil):
		// The name had SRV records and this query failed on the way (a
		// timeout, SERVFAIL): its A records would carry other ports, so
		// the last good set stays.
		return nil, fmt.Errorf("SRV %s: %w", d.name, err)
	case err != nil && !notFound(err):
		// A resolver that refuses SRV queries or does not implement them
		// (dnsmasq without an upstream answers REFUSED, which Go reports
		// as "server misbehaving") still answers A and AAAA.
		d.srvErr = err
	}
	viaSRV := err == nil && len(srvs) > 0
	if err == nil {
		d.srvErr, d.srvNoted = nil, false
	}
	d.self = netip.Addr{}
	seen := map[netip.Addr]bool{}
	var out []peer
	for _, tg := range targets {
		addrs, err := d.res.LookupNetIP(ctx, "ip", tg.host)
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tg.host, err)
		}
		for _, a := range addrs {
			a = a.Unmap().WithZone("")
			if seen[a] {
				continue
			}
			seen[a] = true
			if slices.Contains(own, a) {
				d.self = a
				continue
			}
			out = append(out, peer{Host: a.String(), IperfPort: d.iperfPort, SockperfPort: tg.port})
		}
	}
	d.viaSRV = viaSRV
	return out, nil
}

// temporary is a failure that may pass (a timeout, SERVFAIL), as opposed
// to an answer that the server will not serve the query (REFUSED,
// NOTIMP: "server misbehaving").
func temporary(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && (de.IsTemporary || de.IsTimeout)
}

// notFound is an answer that the name (or record type) does not exist.
func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// ownAddrs are the host's interface addresses.
func ownAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap().WithZone(""))
		}
	}
	return out, nil
}

// peerSources joins the static peers (-peers, -peers-file) and the DNS
// peers into the mesh's one set. A host in both keeps its static ports.
// Safe for concurrent use.
type peerSources struct {
	ms  *mesh
	mu  sync.Mutex
	st  []peer
	dns []peer
}

func (s *peerSources) setStatic(ps []peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = ps
	s.applyLocked()
}

func (s *peerSources) setDNS(ps []peer, self netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dns = ps
	s.ms.setSelf(self)
	s.applyLocked()
}

func (s *peerSources) applyLocked() {
	all := append([]peer(nil), s.st...)
	have := map[string]bool{}
	for _, p := range s.st {
		have[p.Name()] = true
	}
	for _, p := range s.dns {
		if !have[p.Name()] {
			all = append(all, p)
		}
	}
	s.ms.setPeers(all)
}

// resolveLoop looks the -peers-dns name up now and then every period until
// ctx ends, each lookup bounded by timeout. A failed lookup keeps the last
// good set and counts in netperfkit_peers_dns_lookups_total{result="error"};
// an SRV query that fell back to A/AAAA is logged once, until SRV answers
// again.
func resolveLoop(ctx context.Context, d *dnsPeers, src *peerSources, every, timeout time.Duration, m *metrics, log *slog.Logger) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		ps, err := d.lookup(lctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.dnsLookups.WithLabelValues("error").Inc()
			log.Warn("peers DNS lookup failed: keeping the last peers", "name", d.name, "err", err)
		default:
			if d.srvErr != nil && !d.srvNoted {
				d.srvNoted = true
				log.Warn("peers DNS: the SRV query failed, using the name's A/AAAA records (logged once)", "name", d.name, "err", d.srvErr)
			}
			m.dnsLookups.WithLabelValues("ok").Inc()
			m.dnsPeers.Set(float64(len(ps)))
			src.setDNS(ps, d.self)
		}
		t.Reset(every)
	}
}
