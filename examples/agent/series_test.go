package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probeByHand records r as a probe of peer p would: marked probed, and
// observed when p holds series.
func probeByHand(ms *mesh, m *metrics, p string, r rttResult) {
	ms.markProbed(p)
	ms.withSeries(p, func() { m.observeRTT(p, r) })
}

// peersWithSeries counts the peers that have any series in the registry.
func peersWithSeries(t *testing.T, m *metrics) int {
	t.Helper()
	mfs, err := m.reg.Gather()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			for _, l := range x.GetLabel() {
				if l.GetName() == "peer" {
					seen[l.GetValue()] = true
				}
			}
		}
	}
	return len(seen)
}

// TestMeshPeerSeriesBound: a sampled mesh over 40 peers with -peer-series 5
// never holds more than 5 peers' series, whatever it probes (and holds 5
// once the rotation reached them), while the zone-pair histograms get
// every peer's round trips; -peer-series 0 holds none at all.
func TestMeshPeerSeriesBound(t *testing.T) {
	for _, bound := range []int{5, -1} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			m := newMetrics()
			cfg := testMeshConfig(m)
			cfg.topo = topology{mode: meshSample, k: 8}
			cfg.expire = time.Millisecond // unwatched series would expire at once
			cfg.peerSeries = bound
			cfg.srcZone = "az-a"
			cfg.zones, _ = parseZones([]string{"198.18.0.0/25=az-a", "198.18.0.128/25=az-b"})
			cfg.probes.rtt = func(_ context.Context, p peer) (rttResult, error) {
				return rttResult{samples: []time.Duration{time.Millisecond}, lost: 1}, nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			ms := newMesh(ctx, cfg)
			var ps []peer
			for i := range 40 {
				ps = append(ps, peer{Host: fmt.Sprintf("198.18.0.%d", 100+i), SockperfPort: 1})
			}
			ms.setPeers(ps)
			most := 0
			require.Eventually(t, func() bool {
				most = max(most, peersWithSeries(t, m))
				a := testutil.ToFloat64(m.rttZoneMessages.WithLabelValues("az-a", "az-a", "answered"))
				b := testutil.ToFloat64(m.rttZoneMessages.WithLabelValues("az-a", "az-b", "answered"))
				return a >= 28 && b >= 12 // every peer probed at least once
			}, 10*time.Second, time.Millisecond)
			cancel()
			waitOrFail(t, ms.wait, stopBound)
			most = max(most, peersWithSeries(t, m))
			if bound < 0 {
				assert.Zero(t, most, "-peer-series 0: no per-peer series")
			} else {
				assert.Equal(t, bound, most, "at most -peer-series peers hold series, and that many do")
			}
			assert.Equal(t, 2, testutil.CollectAndCount(m.rttZone), "one histogram per zone pair")
			assert.Positive(t, testutil.ToFloat64(m.rttZoneMessages.WithLabelValues("az-a", "az-b", "lost")))
		})
	}
}

// TestMeshWatchedPeers: with -peer-series 2 the two peers after the agent
// in the fleet's address order hold series, no other peer gets any even
// when probed, the watched ones keep theirs past -mesh-expire, and when
// the fleet changes a peer that left the set loses its series; a late
// result of a peer without series is not recorded.
func TestMeshWatchedPeers(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.rttEvery = time.Hour // no rotation during the test
	cfg.topo = topology{mode: meshSample, k: 1}
	cfg.peerSeries = 2
	cfg.expire = time.Millisecond
	ms := newMesh(t.Context(), cfg)
	ms.self = "198.18.0.3"
	ps := []peer{{"198.18.0.1", 1, 2}, {"198.18.0.2", 1, 2}, {"198.18.0.4", 1, 2}, {"198.18.0.5", 1, 2}, {"198.18.0.6", 1, 2}}
	ms.setPeers(ps)
	r := rttResult{samples: []time.Duration{time.Millisecond}}
	probe := func(p string) { probeByHand(ms, m, p, r) }
	for _, p := range ps {
		probe(p.Host)
	}
	for _, p := range ps {
		want := p.Host == "198.18.0.4" || p.Host == "198.18.0.5"
		assert.Equal(t, want, peerSeries(t, m, p.Host) > 0, "%s: the two after 198.18.0.3 hold series", p.Host)
	}
	time.Sleep(5 * time.Millisecond)
	ms.expireSeries(time.Now())
	assert.Positive(t, peerSeries(t, m, "198.18.0.4"), "watched peers' series do not expire between probes")

	ms.setPeers([]peer{ps[0], ps[1], ps[3], ps[4]}) // .4 left: .5 and .6 are watched
	assert.Zero(t, peerSeries(t, m, "198.18.0.4"))
	assert.Positive(t, peerSeries(t, m, "198.18.0.5"))
	probe("198.18.0.6")
	assert.Positive(t, peerSeries(t, m, "198.18.0.6"))
	ms.withSeries("198.18.0.1", func() { m.observeRTT("198.18.0.1", r) })
	assert.Zero(t, peerSeries(t, m, "198.18.0.1"), "a result of a peer without series is not recorded")
	assert.Equal(t, 2, peersWithSeries(t, m))
}

func TestParseZones(t *testing.T) {
	z, err := parseZones([]string{"10.0.0.0/16=us-west-2a", "10.0.16.0/20=us-west-2b", "2001:db8::/32=us-west-2c"})
	require.NoError(t, err)
	for host, want := range map[string]string{
		"10.0.1.1": "us-west-2a", "10.0.17.1": "us-west-2b", "::ffff:10.0.17.1": "us-west-2b",
		"2001:db8::9": "us-west-2c", "10.1.0.1": unknownZone, "peer.example": unknownZone,
	} {
		assert.Equal(t, want, z.of(host), host)
	}
	assert.Equal(t, unknownZone, zoneMap(nil).of("10.0.0.1"))
	for _, bad := range [][]string{{"10.0.0.0/16"}, {"10.0.0.0/16="}, {"10.0.0.0/33=a"}, {"x=a"}, {"10.0.0.0/16=a", "10.0.0.1/16=b"}} {
		_, err := parseZones(bad)
		assert.Error(t, err, "%v", bad)
	}
}

func TestSourceZone(t *testing.T) {
	z, src := sourceZone(t.Context(), "us-east-1b", nil, time.Second)
	assert.Equal(t, "us-east-1b", z)
	assert.Equal(t, "-zone", src)
	z, _ = sourceZone(t.Context(), "", nil, time.Second)
	assert.Equal(t, unknownZone, z, "without -zones IMDS is not asked")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never leave the machine
	z, src = sourceZone(t.Context(), "", zoneMap{{}}, time.Second)
	assert.Equal(t, unknownZone, z)
	assert.Contains(t, src, "AWS_EC2_METADATA_DISABLED")
}

func TestConfigSeriesBudgetFlags(t *testing.T) {
	c, err := parseConfig([]string{"-zones", "10.0.0.0/20=us-west-2a", "-zones", "10.0.16.0/20=us-west-2b", "-zone", "us-west-2a",
		"-peer-series", "0", "-native-histograms-only"}, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/20=us-west-2a", "10.0.16.0/20=us-west-2b"}, c.Zones)
	assert.Equal(t, -1, c.meshPeerSeries(), "-peer-series 0: none")
	assert.True(t, c.NativeOnly)
	d, err := parseConfig(nil, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, defaultPeerSeries, d.meshPeerSeries())
	for _, bad := range [][]string{{"-peer-series", "-2"}, {"-zones", "nope"}, {"-web.config.file", "/nonexistent"}} {
		_, err := parseConfig(bad, os.Stderr)
		assert.Error(t, err, "%v", bad)
	}
}

// TestNativeOnlyHasNoClassicBuckets: -native-histograms-only serves every
// histogram without classic buckets: the text form has +Inf only.
func TestNativeOnlyHasNoClassicBuckets(t *testing.T) {
	for _, native := range []bool{false, true} {
		m := newMetricsFor(native)
		m.observeRTT("p", rttResult{samples: []time.Duration{time.Millisecond}, kernel: []time.Duration{time.Millisecond}})
		m.observeZone("a", "b", rttResult{samples: []time.Duration{time.Millisecond}})
		m.rttStarved.Observe(0.001)
		m.cachePhase.WithLabelValues("e", "total").Observe(0.001)
		mfs, err := m.reg.Gather()
		require.NoError(t, err)
		hists := 0
		for _, mf := range mfs {
			for _, x := range mf.GetMetric() {
				h := x.GetHistogram()
				if h == nil {
					continue
				}
				hists++
				assert.Positive(t, h.GetSchema()+8, "%s has native buckets", mf.GetName())
				if native {
					assert.Empty(t, h.GetBucket(), "%s: no classic buckets", mf.GetName())
				} else {
					assert.Len(t, h.GetBucket(), len(rttBuckets), "%s", mf.GetName())
				}
			}
		}
		assert.Equal(t, 5, hists, "rtt, kernel, zone, starved, cache")
	}
}
