package ethtool_test

import (
	"os"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mustDiff is ethtool.Diff of two snapshots that must have a delta.
func mustDiff(t *testing.T, before, after *ethtool.Snapshot) *ethtool.Delta {
	t.Helper()
	d, err := ethtool.Diff(before, after)
	require.NoError(t, err)
	return d
}

func readFixture(t *testing.T, name string) *ethtool.Snapshot {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	return s
}

func TestDeltaAllowance(t *testing.T) {
	before, after := readFixture(t, "ena-2.17-cross-az-before.txt"), readFixture(t, "ena-2.17-cross-az-after.txt")
	a, ok := mustDiff(t, before, after).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(1234), a.PPSExceeded)
	assert.Zero(t, a.BWInExceeded+a.BWOutExceeded+a.ConntrackExceeded+a.LinklocalExceeded)
	require.NotNil(t, a.ConntrackAvailable)
	require.NotNil(t, a.ConntrackAvailableBefore)
	assert.Equal(t, uint64(136781), *a.ConntrackAvailable)
	assert.Equal(t, uint64(136790), *a.ConntrackAvailableBefore)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Exceeded())
	assert.Empty(t, a.Reset)

	same, ok := mustDiff(t, readFixture(t, "ena-2.17-same-az-before.txt"), readFixture(t, "ena-2.17-same-az-after.txt")).Allowance()
	require.True(t, ok)
	assert.Equal(t, []string{}, same.Exceeded(), "no allowance was hit")

	// Reversed: every allowance counter that moved went backwards.
	rev, ok := mustDiff(t, after, before).Allowance()
	require.True(t, ok)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, rev.Reset)
	assert.Equal(t, []string{}, rev.Exceeded())

	_, ok = mustDiff(t, readFixture(t, "veth.txt"), readFixture(t, "veth.txt")).Allowance()
	assert.False(t, ok, "veth has no allowance counters")
}

func TestAllowanceExceededOrder(t *testing.T) {
	a := ethtool.Allowance{LinklocalExceeded: 1, BWInExceeded: 2, ConntrackExceeded: 3}
	assert.Equal(t, []string{"bw_in_allowance_exceeded", "conntrack_allowance_exceeded", "linklocal_allowance_exceeded"}, a.Exceeded())
}

// allowanceStats is a window end with the five allowance counters, pps at
// pps, and total_resets at resets.
func allowanceStats(pps, resets uint64) ethtool.Stats {
	return ethtool.Stats{{Name: "total_resets", Value: resets},
		{Name: "bw_in_allowance_exceeded"}, {Name: "bw_out_allowance_exceeded", Value: 7},
		{Name: "pps_allowance_exceeded", Value: pps}, {Name: "conntrack_allowance_exceeded"},
		{Name: "linklocal_allowance_exceeded"}}
}

func TestAllowanceResetCounterIsLowerBound(t *testing.T) {
	// pps went from 5000 to 300: it restarted, and 300 packets were shaped
	// since, inside the window.
	before := &ethtool.Snapshot{Stats: allowanceStats(5000, 0)}
	after := &ethtool.Snapshot{Stats: allowanceStats(300, 0)}
	a, ok := mustDiff(t, before, after).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(300), a.PPSExceeded, "at least the count since the reset")
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Reset)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Exceeded())
	assert.Zero(t, a.BWOutExceeded, "bw_out did not move and there was no driver reset")

	// Restarted and nothing shaped since: nothing proves a limit was hit.
	a, ok = mustDiff(t, before, &ethtool.Snapshot{Stats: allowanceStats(0, 0)}).Allowance()
	require.True(t, ok)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Reset)
	assert.Equal(t, []string{}, a.Exceeded())
}

func TestAllowanceAfterDriverReset(t *testing.T) {
	// total_resets rose: every allowance counter may have restarted. pps
	// went from 100 to 150: whether it restarted (150 shaped since) or not
	// (50), at least 50 were shaped, and it is marked as uncertain. bw_out
	// stayed at 7: it may have restarted and climbed back, or not moved,
	// so nothing proves it was hit.
	before := &ethtool.Snapshot{Stats: allowanceStats(100, 0)}
	after := &ethtool.Snapshot{Stats: allowanceStats(150, 1)}
	a, ok := mustDiff(t, before, after).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(50), a.PPSExceeded)
	assert.Zero(t, a.BWOutExceeded)
	assert.Equal(t, ethtool.AllowanceCounters(), a.Reset, "every allowance counter may have restarted")
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Exceeded())

	// total_resets going backwards (driver reload) restarts them too.
	a, ok = mustDiff(t, &ethtool.Snapshot{Stats: allowanceStats(100, 3)}, &ethtool.Snapshot{Stats: allowanceStats(150, 0)}).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(50), a.PPSExceeded)
	assert.Equal(t, ethtool.AllowanceCounters(), a.Reset)
	// One that went backwards certainly restarted: After is its bound.
	a, ok = mustDiff(t, &ethtool.Snapshot{Stats: allowanceStats(100, 0)}, &ethtool.Snapshot{Stats: allowanceStats(30, 1)}).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(30), a.PPSExceeded)
}

// TestAllowanceTotalResetsNew: total_resets only in the later snapshot is
// a counter that appeared, not a reset in the window.
func TestAllowanceTotalResetsNew(t *testing.T) {
	before := allowanceStats(100, 0)[1:] // without total_resets
	a, ok := mustDiff(t, &ethtool.Snapshot{Stats: before}, &ethtool.Snapshot{Stats: allowanceStats(150, 3)}).Allowance()
	require.True(t, ok)
	assert.Empty(t, a.Reset)
	assert.Equal(t, uint64(50), a.PPSExceeded)
}
