package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDNS answers from its maps; a name in fail gives a SERVFAIL.
type fakeDNS struct {
	mu   sync.Mutex
	a    map[string][]string
	srv  map[string][]*net.SRV
	fail bool
}

func (f *fakeDNS) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return "", nil, &net.DNSError{Err: "server misbehaving", Name: name, IsTemporary: true}
	}
	if s, ok := f.srv[name]; ok {
		return name, s, nil
	}
	return "", nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
	}
	as, ok := f.a[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range as {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (f *fakeDNS) setA(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.a[name] = addrs
}

func ownIs(addrs ...string) func() ([]netip.Addr, error) {
	return func() ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func hosts(ps []peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Host)
	}
	slices.Sort(out)
	return out
}

func TestDNSPeersLookup(t *testing.T) {
	f := &fakeDNS{a: map[string][]string{
		"agents.test": {"198.18.0.1", "198.18.0.2", "2001:db8::3", "::ffff:198.18.0.4"},
		"n1.test":     {"198.18.1.1"}, "n2.test": {"198.18.1.2"},
	}, srv: map[string][]*net.SRV{}}
	d, err := newDNSPeers("agents.test::11112", 5201, 11111, f)
	require.NoError(t, err)
	d.own = ownIs("127.0.0.1", "198.18.0.2")

	ps, err := d.lookup(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"198.18.0.1", "198.18.0.4", "2001:db8::3"}, hosts(ps), "own address left out, mapped IPv4 unmapped")
	assert.Equal(t, netip.MustParseAddr("198.18.0.2"), d.self, "the own address in the answer is the agent's place")
	for _, p := range ps {
		assert.Equal(t, 5201, p.IperfPort)
		assert.Equal(t, 11112, p.SockperfPort, "the port given with the name")
	}

	// SRV records win: each target's address with the record's port.
	f.srv["agents.test"] = []*net.SRV{{Target: "n1.test", Port: 7001}, {Target: "n2.test", Port: 7002}, {Target: "gone.test", Port: 1}}
	ps, err = d.lookup(t.Context())
	require.NoError(t, err)
	require.Len(t, ps, 2)
	slices.SortFunc(ps, func(a, b peer) int { return strings.Compare(a.Host, b.Host) })
	assert.Equal(t, peer{"198.18.1.1", 5201, 7001}, ps[0])
	assert.Equal(t, peer{"198.18.1.2", 5201, 7002}, ps[1])
	assert.False(t, d.self.IsValid(), "no own address in this answer")

	// A name without records is an empty answer, not a failure.
	d2, err := newDNSPeers("none.test", 5201, 11111, f)
	require.NoError(t, err)
	d2.own = ownIs()
	ps, err = d2.lookup(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ps)

	f.fail = true
	_, err = d.lookup(t.Context())
	require.Error(t, err, "SERVFAIL is a failed lookup")

	_, err = newDNSPeers("bad host", 1, 2, f)
	require.Error(t, err)
}

// TestResolveLoopFollowsTheName: records added and removed change the
// probed peers without a restart; removed peers lose their series; a
// failed lookup keeps the last good set and is counted; static peers stay.
func TestResolveLoopFollowsTheName(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.probes.rtt = func(context.Context, peer) (rttResult, error) {
		return rttResult{samples: []time.Duration{time.Millisecond}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := newMesh(ctx, cfg)
	src := &peerSources{ms: ms}
	src.setStatic([]peer{{"static", 1, 2}})
	f := &fakeDNS{a: map[string][]string{"fleet": {"198.18.0.1", "198.18.0.2", "198.18.0.9"}}}
	d, err := newDNSPeers("fleet", 1, 2, f)
	require.NoError(t, err)
	d.own = ownIs("198.18.0.9")
	done := make(chan struct{})
	go func() {
		defer close(done)
		resolveLoop(ctx, d, src, 5*time.Millisecond, time.Second, m, slog.New(slog.DiscardHandler))
	}()

	names := func() []string {
		ms.mu.Lock()
		defer ms.mu.Unlock()
		var out []string
		for n := range ms.workers {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool {
		return slices.Equal(names(), []string{"198.18.0.1", "198.18.0.2", "static"}) && rttCount(m, "198.18.0.2") > 0
	}, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.dnsPeers))

	f.setA("fleet", "198.18.0.1", "198.18.0.3", "198.18.0.9")
	require.Eventually(t, func() bool {
		return slices.Equal(names(), []string{"198.18.0.1", "198.18.0.3", "static"})
	}, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, rttCount(m, "198.18.0.2"), "a peer that left has no series")
	assert.Zero(t, peerSeries(t, m, "198.18.0.2"), "nor any other series")

	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.dnsLookups.WithLabelValues("error")) >= 3 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"198.18.0.1", "198.18.0.3", "static"}, names(), "a failed lookup keeps the last good set")
	cancel()
	<-done
	waitOrFail(t, ms.wait, stopBound)
}

// TestRotationCoversEveryPair: every agent of fleets of several sizes,
// running sample:K from the same list, probes at most K peers a period,
// never itself, and each ordered pair within ceil((N-1)/K) periods, from
// any starting period.
func TestRotationCoversEveryPair(t *testing.T) {
	for _, n := range []int{2, 3, 5, 12, 100} {
		for _, k := range []int{1, 3, 7, 200} {
			fleet := make([]string, n)
			for i := range fleet {
				fleet[i] = fmt.Sprintf("198.18.%d.%d", i/200, i%200+1)
			}
			kk := min(k, n-1)
			bound := (n - 1 + kk - 1) / kk
			for _, self := range fleet {
				peers := slices.DeleteFunc(slices.Clone(fleet), func(s string) bool { return s == self })
				slices.Reverse(peers) // the order peers arrive in does not matter
				for start := range 3 {
					seen := map[string]bool{}
					cursor := start * kk % (n - 1)
					for range bound {
						got := rotation(peers, self, cursor, k)
						require.LessOrEqual(t, len(got), k)
						require.NotContains(t, got, self)
						for _, g := range got {
							seen[g] = true
						}
						cursor = (cursor + kk) % (n - 1)
					}
					require.Len(t, seen, n-1, "n=%d k=%d self=%s: every peer within %d periods", n, k, self, bound)
				}
			}
		}
	}
	// Offsets i+1..i+K in the fleet's order, the same on every agent.
	assert.Equal(t, []string{"198.18.0.10", "2001:db8::1"}, rotation([]string{"2001:db8::1", "198.18.0.1", "198.18.0.10"}, "198.18.0.2", 0, 2))
	assert.Equal(t, []string{"198.18.0.1"}, rotation([]string{"2001:db8::1", "198.18.0.1", "198.18.0.10"}, "198.18.0.2", 2, 1))
	// ring: the successor, every period; the last wraps to the first.
	assert.Equal(t, []string{"198.18.0.10"}, rotation([]string{"2001:db8::1", "198.18.0.1", "198.18.0.10"}, "198.18.0.2", 0, 1))
	assert.Equal(t, []string{"198.18.0.1"}, rotation([]string{"198.18.0.2", "198.18.0.1", "198.18.0.10"}, "2001:db8::1", 0, 1))
}

func TestParseTopology(t *testing.T) {
	for s, want := range map[string]topology{"full": {mode: "full"}, "ring": {mode: "ring"}, "auto": {mode: "auto"}, "sample:3": {mode: "sample", k: 3}} {
		got, err := parseTopology(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got)
	}
	for _, s := range []string{"", "sample", "sample:0", "sample:-1", "sample:x", "mesh", "sample:10001"} {
		_, err := parseTopology(s)
		assert.Error(t, err, s)
	}
	mode, k := topology{mode: meshAuto}.effective(autoFullMax)
	assert.Equal(t, meshFull, mode)
	assert.Equal(t, autoFullMax, k)
	mode, k = topology{mode: meshAuto}.effective(999)
	assert.Equal(t, meshSample, mode)
	assert.Equal(t, autoSampleK, k)
	mode, _ = topology{mode: meshSample, k: 5}.effective(5)
	assert.Equal(t, meshFull, mode, "K at least the peers is the full mesh")
}

// TestMeshSampleBoundsProbesAndSeries: with sample:2 over 9 peers, each
// period runs at most 2 probes, all peers are probed within 5 periods, and
// the series held stay those of the last few periods' peers.
func TestMeshSampleBoundsProbesAndSeries(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = 20 * time.Millisecond
	cfg.topo = topology{mode: meshSample, k: 2}
	cfg.expire = 30 * time.Millisecond
	var mu sync.Mutex
	probed := map[string]int{}
	cfg.probes.rtt = func(_ context.Context, p peer) (rttResult, error) {
		mu.Lock()
		probed[p.Host]++
		mu.Unlock()
		return rttResult{samples: []time.Duration{time.Millisecond}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms := newMesh(ctx, cfg)
	var ps []peer
	for i := range 9 {
		ps = append(ps, peer{fmt.Sprintf("198.18.0.%d", i+2), 1, 2})
	}
	ms.setSelf(netip.MustParseAddr("198.18.0.1"))
	ms.setPeers(ps)
	maxSeries := 0.0
	require.Eventually(t, func() bool {
		maxSeries = max(maxSeries, testutil.ToFloat64(m.meshPeers.WithLabelValues("series")))
		mu.Lock()
		defer mu.Unlock()
		return len(probed) == 9
	}, 10*time.Second, time.Millisecond)
	cancel()
	waitOrFail(t, ms.wait, stopBound)
	assert.Equal(t, 9.0, testutil.ToFloat64(m.meshPeers.WithLabelValues("known")))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.meshPeers.WithLabelValues("probed_per_period")))
	assert.Less(t, maxSeries, 9.0, "series of peers not probed lately expire")
	assert.Less(t, testutil.CollectAndCount(m.rttMessages), 9)
}

// TestDNSPeersDoNotWidenAccess: DNS finds whom the agent probes, never
// whom its servers serve: -allow-clients alone decides, for listed and
// discovered peers alike.
func TestDNSPeersDoNotWidenAccess(t *testing.T) {
	c := defaults()
	c.AllowClients = []string{"10.0.0.0/8"}
	a, err := newAccessControl(c)
	require.NoError(t, err)
	c.PeersDNS = "agents.test"
	c.Peers = []string{"192.0.2.1"}
	b, err := newAccessControl(c)
	require.NoError(t, err)
	assert.Equal(t, a.allowed, b.allowed)
}

func TestStarvationParsers(t *testing.T) {
	run, wait, err := parseSchedstat(strings.NewReader("123 456 7\n"))
	require.NoError(t, err)
	assert.Equal(t, 123*time.Nanosecond, run)
	assert.Equal(t, 456*time.Nanosecond, wait)
	for _, bad := range []string{"", "1 2", "1 x 3", "-1 2 3", "1 2 3 4"} {
		_, _, err := parseSchedstat(strings.NewReader(bad))
		assert.ErrorIs(t, err, errStarveFormat, bad)
	}

	p, err := parsePressure(strings.NewReader("some avg10=1.00 avg60=0.50 avg300=0.10 total=2500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=10\n"))
	require.NoError(t, err)
	assert.Equal(t, pressure{some: 2500 * time.Microsecond, full: 10 * time.Microsecond, hasFull: true}, p)
	_, err = parsePressure(strings.NewReader("full total=1\n"))
	assert.ErrorIs(t, err, errStarveFormat)
	_, err = parsePressure(strings.NewReader("some avg10=1\n"))
	assert.ErrorIs(t, err, errStarveFormat)

	v1, err := parseCPUStat(strings.NewReader("nr_periods 10\nnr_throttled 4\nthrottled_time 5000000\nnr_bursts 0\n"))
	require.NoError(t, err)
	assert.Equal(t, cpuStat{periods: 10, throttled: 4, throttledTime: 5 * time.Millisecond}, v1)
	v2, err := parseCPUStat(strings.NewReader("usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 3\nnr_throttled 2\nthrottled_usec 700\n"))
	require.NoError(t, err)
	assert.Equal(t, cpuStat{periods: 3, throttled: 2, throttledTime: 700 * time.Microsecond}, v2)
	_, err = parseCPUStat(strings.NewReader("usage_usec 1\n"))
	assert.ErrorIs(t, err, errStarveFormat, "v2 without the cpu controller")

	exists := func(set ...string) func(string) bool {
		return func(p string) bool { return slices.Contains(set, p) }
	}
	assert.Equal(t, "/c/cpu/np33", cgroupCPUDir(strings.NewReader("2:cpuacct:/\n1:cpu:/np33\n0::/\n"), "/c", exists("/c/cpu/np33/cpu.stat")))
	assert.Equal(t, "/c/cpu,cpuacct/k", cgroupCPUDir(strings.NewReader("4:cpu,cpuacct:/k\n"), "/c", exists("/c/cpu,cpuacct/k/cpu.stat")))
	assert.Equal(t, "/c/pod/x", cgroupCPUDir(strings.NewReader("0::/pod/x\n"), "/c", exists("/c/pod/x/cpu.stat", "/c/cgroup.controllers")))
	assert.Empty(t, cgroupCPUDir(strings.NewReader("0::/pod/x\n"), "/c", exists("/c/pod/x/cpu.stat")), "v2 needs the unified root")
	assert.Empty(t, cgroupCPUDir(strings.NewReader("garbage"), "/c", exists()))
}

// TestStarvationJudge reads a fake /proc/self: wait grows past the flag
// or the cgroup is throttled, and the probe between is flagged.
func TestStarvationJudge(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write("proc/task/1/schedstat", "100 1000000 5\n")
	write("proc/task/2/schedstat", "100 500000 5\n")
	write("cg/cpu.stat", "nr_periods 5\nnr_throttled 0\nthrottled_time 0\n")
	write("psi", "some avg10=0 avg60=0 avg300=0 total=3000000\n")
	s := &starvation{procDir: filepath.Join(dir, "proc"), psiFile: filepath.Join(dir, "psi"), cgDir: filepath.Join(dir, "cg"),
		waitFlag: time.Millisecond, lastWait: map[string]time.Duration{}}
	a := s.sample()
	require.True(t, a.ok)
	assert.Equal(t, 1500*time.Microsecond, a.wait)
	assert.Empty(t, s.judge(a, s.sample(), 1), "nothing grew")

	write("proc/task/2/schedstat", "100 1400000 5\n") // +0.9 ms
	s.tasksRead = time.Time{}
	b := s.sample()
	assert.Empty(t, s.judge(a, b, 1), "0.9 ms is under the flag")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "proc/task/1"))) // a thread exits: its wait stays counted
	write("proc/task/3/schedstat", "1 1200000 1\n")
	s.tasksRead = time.Time{} // list the threads again now
	c := s.sample()
	assert.Equal(t, 3600*time.Microsecond, c.wait)
	assert.Equal(t, "wait", s.judge(b, c, 1))
	assert.Empty(t, s.judge(b, c, 2), "1.2 ms over two messages is under 1 ms a message")

	write("cg/cpu.stat", "nr_periods 9\nnr_throttled 1\nthrottled_time 40000\n")
	assert.Equal(t, "throttled", s.judge(c, s.sample(), 1000))

	reg := newMetrics().reg
	reg.MustRegister(newStarveCollector(s))
	assert.Equal(t, 5, testutil.CollectAndCount(newStarveCollector(s)))
	var nilS *starvation
	assert.Empty(t, nilS.judge(nilS.sample(), nilS.sample(), 1))
}

func TestStarvedProbesKeptOutOfTheMainHistogram(t *testing.T) {
	m := newMetrics()
	m.observeRTT("p", rttResult{samples: []time.Duration{time.Millisecond, 2 * time.Millisecond}})
	m.observeRTT("p", rttResult{samples: []time.Duration{time.Second}, starved: "wait"})
	assert.Equal(t, uint64(2), rttCount(m, "p"))
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	var native, starved bool
	for _, mf := range mfs {
		switch mf.GetName() {
		case "netperfkit_probe_rtt_seconds":
			h := mf.GetMetric()[0].GetHistogram()
			native = h.Schema != nil && len(h.GetPositiveSpan()) > 0
			assert.NotEmpty(t, h.GetBucket(), "classic buckets kept for servers without native histograms")
		case "netperfkit_probe_rtt_starved_seconds":
			starved = mf.GetMetric()[0].GetHistogram().GetSampleCount() == 1
		}
	}
	assert.True(t, native, "the RTT histogram has native buckets")
	assert.True(t, starved)
}

// TestPeerSeriesModes: -peer-series 0 keeps no peer's series (the mesh's
// -1), -1 every probed peer's (the mesh's 0), dropped -mesh-expire after
// its last probe; -mesh-expire without -peer-series -1 parses and is
// reported as doing nothing.
func TestPeerSeriesModes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		mesh int
		warn bool
	}{
		{[]string{"-peer-series", "0"}, -1, false},
		{[]string{"-peer-series", "7"}, 7, false},
		{[]string{"-peer-series", "-1", "-mesh-expire", "1m"}, 0, false},
		{[]string{"-mesh-expire", "1m"}, defaultPeerSeries, true},
	} {
		c, err := parseConfig(tc.args, os.Stderr)
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.mesh, c.meshPeerSeries(), "%v", tc.args)
		var log bytes.Buffer
		newLogger(c, &log)
		if tc.warn {
			require.Len(t, c.warnings(), 1, "%v", tc.args)
			assert.Contains(t, log.String(), "level=WARN msg=\"-mesh-expire has no effect", "logged at start")
		} else {
			assert.Empty(t, c.warnings(), "%v", tc.args)
			assert.Empty(t, log.String(), "%v", tc.args)
		}
	}
}

// TestMeshEveryPeerSeriesExpire: with every peer holding series (the
// mesh's peerSeries 0, -peer-series -1), a peer's series go once it was
// not probed for the expiry, and a peer probed again gets them back.
func TestMeshEveryPeerSeriesExpire(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = time.Hour // no rotation: the test probes by hand
	cfg.topo = topology{mode: meshSample, k: 1}
	cfg.expire = time.Minute
	ms := newMesh(t.Context(), cfg)
	ms.self = "198.18.0.9"
	ms.setPeers([]peer{{"198.18.0.1", 1, 2}, {"198.18.0.2", 1, 2}, {"198.18.0.3", 1, 2}})
	r := rttResult{samples: []time.Duration{time.Millisecond}}
	probe := func(p string) { probeByHand(ms, m, p, r) }
	for _, p := range []string{"198.18.0.1", "198.18.0.2", "198.18.0.3"} {
		probe(p)
	}
	assert.Equal(t, 3, peersWithSeries(t, m), "every probed peer holds series")
	now := time.Now()
	ms.lmu.Lock()
	ms.probed["198.18.0.1"] = now.Add(-2 * time.Minute)
	ms.lmu.Unlock()
	ms.expireSeries(now)
	assert.Equal(t, 2, peersWithSeries(t, m), "the peer not probed for -mesh-expire lost its series")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.meshPeers.WithLabelValues("series")))
	probe("198.18.0.1")
	assert.Equal(t, 3, peersWithSeries(t, m), "probed again, it holds series again")
}

func TestFleetConfig(t *testing.T) {
	c, err := parseConfig([]string{"-peers-dns", "agents.test::11112", "-mesh", "sample:3", "-rtt-every", "1s"}, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.dnsEvery())
	assert.Equal(t, 3*time.Second+5*time.Second, c.meshExpire())
	for _, bad := range [][]string{{"-mesh", "x"}, {"-peers-dns", "a b"}, {"-peers-dns-every", "1ms"}, {"-starved-wait", "-1s"}} {
		_, err := parseConfig(bad, os.Stderr)
		assert.Error(t, err, "%v", bad)
	}
}

// peerSeries counts the registry's series labelled with the peer.
func peerSeries(t *testing.T, m *metrics, p string) int {
	t.Helper()
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			for _, l := range x.GetLabel() {
				if l.GetName() == "peer" && l.GetValue() == p {
					n++
				}
			}
		}
	}
	return n
}

// An RTT probe is judged by its own thread's wait: the other threads' waits
// (the runtime's, other probes') do not flag it, and the thread's does.
func TestStarvationJudgesTheProbesThread(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write("proc/task/1/schedstat", "100 1000000 5\n")
	write("proc/task/2/schedstat", "100 500000 5\n")
	write("thread", "100 500000 5\n") // the probe's thread is task 2
	s := &starvation{procDir: filepath.Join(dir, "proc"), thread: filepath.Join(dir, "thread"), psiFile: filepath.Join(dir, "psi"),
		waitFlag: time.Millisecond, lastWait: map[string]time.Duration{}}
	a := s.sampleThread()
	require.True(t, a.ok)
	assert.Equal(t, 500*time.Microsecond, a.wait, "the thread's own wait")

	write("proc/task/1/schedstat", "100 9000000 5\n") // another thread waited 8 ms
	s.tasksRead = time.Time{}
	b := s.sampleThread()
	assert.Empty(t, s.judge(a, b, 1), "another thread's wait does not flag the probe")

	write("thread", "100 2000000 5\n") // the probe's thread waited 1.5 ms
	assert.Equal(t, "wait", s.judge(b, s.sampleThread(), 1))

	s.thread = filepath.Join(dir, "missing")
	assert.Equal(t, s.sample().wait, s.sampleThread().wait, "without the thread's file: every thread's sum")
}
