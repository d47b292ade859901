package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(t *testing.T, name string) *ethtool.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "ethtool", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	s.Interface, s.Driver = "eth0", "ena"
	return s
}

// TestSRDCoverageFromWatchDelta checks that the coverage the sampler computes
// from a Watch Delta is srd.Coverage of the two snapshots, on the field
// captures of a same-AZ and a cross-AZ window.
func TestSRDCoverageFromWatchDelta(t *testing.T) {
	measured := 0
	for _, pair := range [][2]string{
		{"ena-2.17-same-az-before.txt", "ena-2.17-same-az-after.txt"},
		{"ena-2.17-cross-az-before.txt", "ena-2.17-cross-az-after.txt"},
	} {
		before, after := fixture(t, pair[0]), fixture(t, pair[1])
		require.True(t, hasSRDCounters(after))
		d, err := ethtool.Diff(before, after)
		require.NoError(t, err)
		b, a := deltaSnapshots(*d)
		got, ok := srdCoverage(b, a)
		want := srd.Coverage(before, after)
		if want.EligibleTxPktsDelta == 0 {
			assert.False(t, ok, pair[1])
			continue
		}
		require.True(t, ok, pair[1])
		assert.InDelta(t, want.Coverage, got, 1e-12, pair[1])
		assert.GreaterOrEqual(t, got, 0.0)
		assert.LessOrEqual(t, got, 1.0)
		measured++
	}
	assert.Positive(t, measured, "at least one capture has eligible traffic")
}

func TestSRDCoverageNeedsTheCounters(t *testing.T) {
	veth := fixture(t, "veth.txt")
	assert.False(t, hasSRDCounters(veth))
	_, ok := srdCoverage(veth, veth)
	assert.False(t, ok)
	old := fixture(t, "ena-2.4-no-srd.txt")
	assert.False(t, hasSRDCounters(old), "an ENA driver without SRD counters")
}

func TestSRDCoverageUndefinedWithoutEligibleTraffic(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{
		{Name: "ena_srd_mode", Value: 3}, {Name: "ena_srd_tx_pkts", Value: 10}, {Name: "ena_srd_eligible_tx_pkts", Value: 10},
	}}
	_, ok := srdCoverage(s, s)
	assert.False(t, ok, "nothing eligible in the window: no ratio")
	later := s.Clone()
	later.Stats[1].Value, later.Stats[2].Value = 60, 110
	r, ok := srdCoverage(s, later)
	require.True(t, ok)
	assert.InDelta(t, 0.5, r, 1e-12)
}
