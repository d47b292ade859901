package ethtool_test

import (
	"os"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	a, ok := ethtool.Diff(before, after).Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(1234), a.PPSExceeded)
	assert.Zero(t, a.BWInExceeded+a.BWOutExceeded+a.ConntrackExceeded+a.LinklocalExceeded)
	require.NotNil(t, a.ConntrackAvailable)
	require.NotNil(t, a.ConntrackAvailableBefore)
	assert.Equal(t, uint64(136781), *a.ConntrackAvailable)
	assert.Equal(t, uint64(136790), *a.ConntrackAvailableBefore)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Exceeded())
	assert.Empty(t, a.Reset)

	same, ok := ethtool.Diff(readFixture(t, "ena-2.17-same-az-before.txt"), readFixture(t, "ena-2.17-same-az-after.txt")).Allowance()
	require.True(t, ok)
	assert.Equal(t, []string{}, same.Exceeded(), "no allowance was hit")

	// Reversed: every allowance counter that moved went backwards.
	rev, ok := ethtool.Diff(after, before).Allowance()
	require.True(t, ok)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, rev.Reset)
	assert.Equal(t, []string{}, rev.Exceeded())

	_, ok = ethtool.Diff(readFixture(t, "veth.txt"), readFixture(t, "veth.txt")).Allowance()
	assert.False(t, ok, "veth has no allowance counters")
}

func TestAllowanceExceededOrder(t *testing.T) {
	a := ethtool.AllowanceDelta{LinklocalExceeded: 1, BWInExceeded: 2, ConntrackExceeded: 3}
	assert.Equal(t, []string{"bw_in_allowance_exceeded", "conntrack_allowance_exceeded", "linklocal_allowance_exceeded"}, a.Exceeded())
}
