package main

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Topologies of -mesh.
const (
	meshFull   = "full"   // every peer every period
	meshRing   = "ring"   // the next agent in the fleet's list, every period
	meshSample = "sample" // K peers a period, in a rotation
	meshAuto   = "auto"   // full up to autoFullMax peers, sample:autoSampleK above
)

// autoFullMax is the largest peer count -mesh auto probes in full: 32
// probes a period; above it, sample:autoSampleK keeps an agent's probes
// at 32 a period whatever the fleet's size.
const (
	autoFullMax = 32
	autoSampleK = 32
)

// topology is which peers an agent probes each period. The zero value is
// the full mesh.
type topology struct {
	mode string
	k    int // sample size (sample)
}

// parseTopology reads -mesh: full, ring, sample:K or auto.
func parseTopology(s string) (topology, error) {
	switch s {
	case meshFull, meshRing, meshAuto:
		return topology{mode: s}, nil
	}
	if ks, ok := strings.CutPrefix(s, meshSample+":"); ok {
		k, err := strconv.Atoi(ks)
		if err == nil && k >= 1 && k <= 10000 {
			return topology{mode: meshSample, k: k}, nil
		}
	}
	return topology{}, fmt.Errorf("-mesh %q: want full, ring, sample:K (K 1..10000) or auto", s)
}

// effective is the topology for n peers and the probes it runs a period.
func (t topology) effective(n int) (mode string, probes int) {
	switch t.mode {
	case meshRing:
		return meshRing, min(1, n)
	case meshSample:
		if t.k >= n {
			return meshFull, n
		}
		return meshSample, t.k
	case meshAuto:
		if n <= autoFullMax {
			return meshFull, n
		}
		return meshSample, autoSampleK
	}
	return meshFull, n
}

// addrOrder sorts the fleet's members the same way on every agent:
// addresses by value (IPv4 before IPv6), then names.
func addrOrder(a, b string) int {
	pa, ea := netip.ParseAddr(a)
	pb, eb := netip.ParseAddr(b)
	switch {
	case ea == nil && eb == nil:
		return pa.Compare(pb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// rotation returns the peers an agent probes in one period: the fleet's
// list is its peers and itself (self; "" when unknown) in addrOrder, i is
// its place in it, and it probes offsets i+c+1 .. i+c+k (mod N, never
// itself), where the cursor c advances by k each period. So every agent
// probes k peers a period, and over ceil((N-1)/k) periods each probes
// every other one. Without self, the offsets run over the peers alone.
func rotation(peers []string, self string, cursor, k int) []string {
	list := append([]string(nil), peers...)
	if self != "" && !slices.Contains(list, self) {
		list = append(list, self)
	}
	slices.SortFunc(list, addrOrder)
	m := len(peers)
	if m == 0 || k <= 0 {
		return nil
	}
	k = min(k, m)
	i := slices.Index(list, self) // -1 without self: offsets start at list[0]
	out := make([]string, 0, k)
	for j := range k {
		o := (cursor+j)%m + 1 // 1..m
		if i < 0 {
			out = append(out, list[o-1])
		} else {
			out = append(out, list[(i+o)%len(list)])
		}
	}
	return out
}

// setSelf records the agent's own address in the fleet (from the DNS
// answer that held it), its place in the rotation.
func (m *mesh) setSelf(a netip.Addr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a.IsValid() {
		m.self = a.String()
	}
}

// rotate runs the RTT probes of a topology that is not full: each period
// the peers rotation picks, at most maxProbes at once. Every period it
// also drops the series of peers not probed for cfg.expire.
func (m *mesh) rotate(ctx context.Context) {
	t := time.NewTimer(m.jittered(m.cfg.rttEvery))
	if m.cfg.firstJitter {
		t.Reset(time.Duration(m.cfg.rand() * float64(m.cfg.rttEvery)))
	}
	defer t.Stop()
	cursor, round := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		m.mu.Lock()
		rotating, self := m.rotating, m.self
		peers := make(map[string]*worker, len(m.workers))
		names := make([]string, 0, len(m.workers))
		for name, w := range m.workers {
			peers[name] = w
			names = append(names, name)
		}
		m.mu.Unlock()
		if rotating {
			mode, k := m.cfg.topo.effective(len(names))
			if mode == meshRing {
				cursor = 0
			}
			picked := rotation(names, self, cursor, k)
			cursor = (cursor + k) % max(len(names), 1)
			round++
			m.cfg.log.Debug("mesh round", "round", round, "self", self, "peers", picked)
			m.setGauges(len(names), len(picked))
			m.probeAll(ctx, picked, peers)
		}
		m.expireSeries(time.Now())
		t.Reset(max(m.jittered(m.cfg.rttEvery)-time.Since(start), 0))
	}
}

// probeAll runs one RTT probe to each named peer, at most maxProbes at
// once, and returns when all ended. Each probe runs in its peer's worker's
// context, so a peer removed meanwhile has its probe ended and not
// recorded (its series stay deleted).
func (m *mesh) probeAll(ctx context.Context, names []string, peers map[string]*worker) {
	done := make(chan struct{}, len(names))
	for _, name := range names {
		if !m.acquire(ctx) {
			break
		}
		go func() {
			defer func() { done <- struct{}{} }()
			defer m.release()
			m.probeRTT(peers[name].ctx, peers[name].p)
		}()
		defer func() { <-done }()
	}
}

// markProbed notes a probe of the peer now; a peer without series gets
// its error and message counters at zero, so rate() sees their first rise.
// Only the watched peers get series (see watch).
func (m *mesh) markProbed(name string) {
	m.lmu.Lock()
	defer m.lmu.Unlock()
	if _, ok := m.probed[name]; !ok {
		if m.watched != nil && !m.watched[name] {
			return // no series: the zone-pair series have its round trips
		}
		for _, kind := range []string{"timeout", "refused", "lost"} {
			m.cfg.metrics.errs.WithLabelValues(name, kind)
		}
		if m.cfg.rttEvery > 0 {
			m.cfg.metrics.rttMessages.WithLabelValues(name)
		}
	}
	m.probed[name] = time.Now()
}

// watch makes the peers that hold per-peer series, with cfg.peerSeries
// positive, the cfg.peerSeries peers that follow the agent in the
// fleet's list (rotation's first offsets; the list's first peers while
// the agent's place is unknown): the same peers for as long as the fleet
// is the same, so their series are continuous and a Prometheus holds N x
// peerSeries of them, not series created and dropped for each peer in
// turn. Those peers' series do not expire between their probes. A peer
// that leaves the set loses its series. Called with m.mu held.
func (m *mesh) watch(names []string) {
	if m.cfg.peerSeries == 0 {
		return // every peer
	}
	set := map[string]bool{}
	if m.cfg.peerSeries > 0 {
		for _, n := range rotation(names, m.self, 0, m.cfg.peerSeries) {
			set[n] = true
		}
	}
	m.lmu.Lock()
	defer m.lmu.Unlock()
	m.watched = set
	for name := range m.probed {
		if !set[name] {
			delete(m.probed, name)
			m.cfg.metrics.forgetPeer(name)
		}
	}
}

// withSeries runs record, which writes the peer's series, when the peer
// holds series (it was marked probed and has not left the watched set or
// expired since), under the lock that dropping series takes: so a probe
// still running when its peer lost its series never brings them back,
// and the peers with series stay within cfg.peerSeries.
func (m *mesh) withSeries(name string, record func()) {
	m.lmu.Lock()
	defer m.lmu.Unlock()
	if _, ok := m.probed[name]; ok {
		record()
	}
}

// forget deletes a peer's series.
func (m *mesh) forget(name string) {
	m.lmu.Lock()
	defer m.lmu.Unlock()
	delete(m.probed, name)
	m.cfg.metrics.forgetPeer(name)
}

// expireSeries deletes the series of peers not probed since now-expire,
// so a sampled mesh holds the series of the peers of its last few periods
// only, not of all N-1.
func (m *mesh) expireSeries(now time.Time) {
	if m.cfg.expire <= 0 {
		return
	}
	m.lmu.Lock()
	for name, t := range m.probed {
		if now.Sub(t) > m.cfg.expire && !m.watched[name] {
			delete(m.probed, name)
			m.cfg.metrics.forgetPeer(name)
		}
	}
	n := len(m.probed)
	m.lmu.Unlock()
	m.cfg.metrics.meshPeers.WithLabelValues("series").Set(float64(n))
}

// setGauges exports netperfkit_mesh_peers: known peers, probes a period
// (probes < 0: what the topology gives for known), and peers with series.
func (m *mesh) setGauges(known, probes int) {
	if m.cfg.metrics == nil {
		return
	}
	if probes < 0 {
		_, probes = m.cfg.topo.effective(known)
		if m.cfg.rttEvery == 0 {
			probes = 0
		}
	}
	m.lmu.Lock()
	n := len(m.probed)
	m.lmu.Unlock()
	m.cfg.metrics.meshPeers.WithLabelValues("known").Set(float64(known))
	m.cfg.metrics.meshPeers.WithLabelValues("probed_per_period").Set(float64(probes))
	m.cfg.metrics.meshPeers.WithLabelValues("series").Set(float64(n))
}
