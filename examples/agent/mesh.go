package main

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// probeFuncs are the probes the mesh runs; the adapters of parts.go in the
// agent, fakes in tests.
type probeFuncs struct {
	rtt  func(ctx context.Context, p peer) (rttResult, error)
	tput func(ctx context.Context, p peer, maxBytes int64) (tputResult, error)
}

// meshConfig is the schedule of the mesh.
type meshConfig struct {
	rttEvery     time.Duration // 0: no RTT probes
	tputEvery    time.Duration // 0: no throughput probes
	tputBytes    int64         // reservation per throughput probe
	rttTimeout   time.Duration // bound on one RTT probe
	tputTimeout  time.Duration // bound on one throughput probe
	maxProbes    int           // probes at once, all peers
	jitter       float64       // each wait is every * (1 ± jitter)
	firstJitter  bool          // the first probe waits a random part of every
	budget       *byteBudget
	probes       probeFuncs
	metrics      *metrics
	log          *slog.Logger
	rand         func() float64 // in [0,1); nil means math/rand/v2
	onProbeStart func(kind string, p peer)
	// topo is which peers an agent probes each period (-mesh); the zero
	// value is the full mesh.
	topo topology
	// expire drops a peer's series once it went this long without a
	// probe (0: never); only a sampled mesh leaves peers unprobed.
	expire time.Duration
	// starve tells whether the agent was starved of CPU during a probe;
	// nil: probes are never flagged.
	starve *starvation
	// peerSeries is how many peers hold per-peer series at most: the
	// ones that follow the agent in the fleet's list (see watch; 0: every
	// peer; negative: none, -peer-series 0).
	peerSeries int
	// srcZone and zones label the zone-pair series: the agent's zone
	// and the peers' by subnet (nil: every peer's is unknownZone).
	srcZone string
	zones   zoneMap
}

// mesh probes a changing set of peers, each on its own schedule, with at
// most maxProbes probes in flight and at most one throughput probe per peer
// at a time. A peer that does not answer costs one bounded probe per period
// and shows up in netperfkit_probe_errors_total; it never holds up the others.
type mesh struct {
	cfg meshConfig
	sem chan struct{}
	ctx context.Context

	mu      sync.Mutex
	workers map[string]*worker
	wg      sync.WaitGroup
	// rotating is true when RTT probes follow the rotation (topology not
	// full for the current peers) instead of each peer's own loop.
	rotating bool
	self     string // the agent's own address in the fleet's list; "" unknown

	lmu    sync.Mutex
	probed map[string]time.Time // peers with series: when last probed
	// watched are the peers that may hold series (see watch); nil: all.
	watched map[string]bool
}

type worker struct {
	p      peer
	rtt    bool            // runs its own RTT loop (full mesh)
	ctx    context.Context // ends when the peer is removed
	cancel context.CancelFunc
	done   chan struct{}
}

func newMesh(ctx context.Context, cfg meshConfig) *mesh {
	if cfg.rand == nil {
		cfg.rand = rand.Float64
	}
	m := &mesh{cfg: cfg, sem: make(chan struct{}, max(cfg.maxProbes, 1)), ctx: ctx, workers: map[string]*worker{},
		probed: map[string]time.Time{}}
	if cfg.rttEvery > 0 && cfg.metrics != nil {
		m.wg.Go(func() { m.rotate(ctx) })
	}
	return m
}

// setPeers makes peers the probed set: new peers start, removed peers stop
// and lose their series, and a peer whose ports changed restarts.
func (m *mesh) setPeers(peers []peer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]peer{}
	for _, p := range peers {
		want[p.Name()] = p
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	m.watch(names)
	mode, _ := m.cfg.topo.effective(len(want))
	m.rotating = mode != meshFull
	perPeerRTT := m.cfg.rttEvery > 0 && !m.rotating
	for name, w := range m.workers {
		if p, ok := want[name]; ok && p == w.p && w.rtt == perPeerRTT {
			continue
		}
		w.cancel()
		<-w.done
		delete(m.workers, name)
		if _, ok := want[name]; !ok {
			m.forget(name)
			m.cfg.log.Info("peer removed", "peer", name)
		}
	}
	for name, p := range want {
		if _, ok := m.workers[name]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(m.ctx)
		w := &worker{p: p, rtt: perPeerRTT, ctx: ctx, cancel: cancel, done: make(chan struct{})}
		m.workers[name] = w
		if !m.rotating {
			// A sampled mesh creates a peer's series at its first probe:
			// creating them for every peer would hold N of them.
			m.markProbed(name)
		}
		m.cfg.log.Info("peer added", "peer", name, "iperf3_port", p.IperfPort, "sockperf_port", p.SockperfPort)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer close(w.done)
			m.run(ctx, p, w.rtt)
		}()
	}
	m.setGauges(len(m.workers), -1)
}

// wait returns when every worker has ended (after ctx ends).
func (m *mesh) wait() { m.wg.Wait() }

// run is one peer's schedule: an RTT loop and a throughput loop. Each loop
// runs its probes one after the other, so a peer never has two throughput
// probes at once.
func (m *mesh) run(ctx context.Context, p peer, rtt bool) {
	var wg sync.WaitGroup
	if rtt {
		wg.Go(func() { m.loop(ctx, m.cfg.rttEvery, func() { m.probeRTT(ctx, p) }) })
	}
	if m.cfg.tputEvery > 0 {
		wg.Go(func() { m.loop(ctx, m.cfg.tputEvery, func() { m.probeTput(ctx, p) }) })
	}
	wg.Wait()
}

// loop calls probe every period with jitter, until ctx ends. The first call
// comes after a random part of a period, so agents started together spread
// their probes.
func (m *mesh) loop(ctx context.Context, every time.Duration, probe func()) {
	wait := m.jittered(every)
	if m.cfg.firstJitter {
		wait = time.Duration(m.cfg.rand() * float64(every))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		if !m.acquire(ctx) {
			return
		}
		probe()
		m.release()
		// The period runs from start to start; a probe longer than a
		// period is followed at once by the next.
		t.Reset(max(m.jittered(every)-time.Since(start), 0))
	}
}

func (m *mesh) jittered(every time.Duration) time.Duration {
	f := 1 + m.cfg.jitter*(2*m.cfg.rand()-1)
	return time.Duration(float64(every) * f)
}

func (m *mesh) acquire(ctx context.Context) bool {
	select {
	case m.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (m *mesh) release() { <-m.sem }

func (m *mesh) probeRTT(ctx context.Context, p peer) {
	if m.cfg.onProbeStart != nil {
		m.cfg.onProbeStart("rtt", p)
	}
	m.markProbed(p.Name())
	pctx, cancel := context.WithTimeout(ctx, m.cfg.rttTimeout)
	defer cancel()
	// The probe's ping-pong runs on this goroutine's thread (latency
	// locks it), so that thread's own run-queue wait is what the agent's
	// scheduling added to its round trips.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := m.cfg.starve.sampleThread()
	r, err := m.cfg.probes.rtt(pctx, p)
	if ctx.Err() != nil {
		return // shutting down or removed: not the peer's fault
	}
	after := m.cfg.starve.sampleThread()
	r.starved = m.cfg.starve.judge(before, after, r.messages())
	if r.starved != "" {
		m.cfg.metrics.starved.WithLabelValues("rtt", r.starved).Inc()
	}
	// A probe that rttTimeout cut short still reports what it measured,
	// and counts as a timeout as well.
	m.cfg.metrics.observeZone(m.srcZone(), m.cfg.zones.of(p.Host), r)
	var kind string
	if err != nil {
		kind = probeErrorKind(err)
	}
	m.withSeries(p.Name(), func() {
		m.cfg.metrics.observeRTT(p.Name(), r)
		if err != nil {
			m.cfg.metrics.probeError(p.Name(), kind)
		}
	})
	m.cfg.log.Debug("rtt probe", "peer", p.Name(), "samples_ns", r.samples, "lost", r.lost, "starved", r.starved,
		"runqueue_wait_ns", waited(before, after))
	if err != nil {
		m.cfg.log.Debug("rtt probe failed", "peer", p.Name(), "kind", kind, "answered", len(r.samples), "lost", r.lost, "err", err)
	}
}

// srcZone is the agent's zone label.
func (m *mesh) srcZone() string {
	if m.cfg.srcZone == "" {
		return unknownZone
	}
	return m.cfg.srcZone
}

func (m *mesh) probeTput(ctx context.Context, p peer) {
	res := m.cfg.budget.reserve(m.cfg.tputBytes)
	if res == nil {
		m.withSeries(p.Name(), func() { m.cfg.metrics.skipped.WithLabelValues(p.Name(), "budget").Inc() })
		m.cfg.log.Debug("throughput probe skipped: hourly byte budget spent", "peer", p.Name())
		return
	}
	if m.cfg.onProbeStart != nil {
		m.cfg.onProbeStart("tput", p)
	}
	m.markProbed(p.Name())
	pctx, cancel := context.WithTimeout(ctx, m.cfg.tputTimeout)
	defer cancel()
	r, err := m.cfg.probes.tput(pctx, p, m.cfg.tputBytes)
	// Bytes sent count against the budget even when the probe failed.
	m.cfg.budget.settle(res, r.sentBytes)
	m.withSeries(p.Name(), func() { m.cfg.metrics.tputBytes.WithLabelValues(p.Name()).Add(float64(r.sentBytes)) })
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		kind := probeErrorKind(err)
		m.withSeries(p.Name(), func() { m.cfg.metrics.probeError(p.Name(), kind) })
		m.cfg.log.Debug("throughput probe failed", "peer", p.Name(), "kind", kind, "err", err)
		return
	}
	m.withSeries(p.Name(), func() { m.cfg.metrics.tput.WithLabelValues(p.Name()).Set(r.bitsPerSecond) })
}

// every runs fn on the mesh's schedule rules (jitter, the shared limit on
// probes in flight) until ctx ends, for probes that are not per peer.
func (m *mesh) every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	m.wg.Go(func() { m.loop(ctx, d, func() { fn(ctx) }) })
}
