package srd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCoveragePercent(t *testing.T) {
	for _, c := range []struct {
		tx, eligible uint64
		want         string
	}{
		{28195046, 28195063, "99.999939"}, // 17 fallback packets: not rounded to 100
		{28195047, 28195063, "99.999943"},
		{999, 1000, "99.900"},
		{1, 3, "33.333"},
		{999_999_999_999, 1_000_000_000_000, "99.99999999990"},
		{1000, 1000, "100"},
		{0, 1000, "0.000"},
	} {
		assert.Equal(t, c.want, coveragePercent(c.tx, c.eligible), "%d of %d", c.tx, c.eligible)
	}
	assert.Equal(t, "-", CoverageReport{Verdict: VerdictNoTraffic}.Percent(), "nothing eligible")
	assert.Equal(t, "-", CoverageReport{Verdict: VerdictNoStatistics, EligibleTxPktsDelta: 5}.Percent())
}

func FuzzCoveragePercent(f *testing.F) {
	f.Add(uint64(28195046), uint64(28195063))
	f.Add(uint64(0), uint64(1))
	f.Add(uint64(1<<63), uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, tx, eligible uint64) {
		if eligible == 0 {
			return
		}
		s := coveragePercent(tx, eligible)
		if tx < eligible && (strings.HasPrefix(s, "100") || s == "") {
			t.Fatalf("%d of %d reads %q: a fallback was rounded away", tx, eligible, s)
		}
	})
}

// TestWindowsWithoutCounters: an interface without ENA counters gives "-"
// cells, never +0, and one line per cause.
func TestWindowsWithoutCounters(t *testing.T) {
	veth := fixture(t, "veth.txt", 0)
	later := fixture(t, "veth.txt", time.Second)
	w := NewWindow(veth, later)
	assert.Nil(t, w.Allowance)
	assert.False(t, w.HasSRD())
	assert.Equal(t, []string{}, w.LimitedBy)
	assert.Equal(t, "-", w.LimitedByText())
	b, err := json.Marshal(w)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "pps_allowance_exceeded", "no counters, no zero delta")
	assert.Contains(t, string(b), `"limited_by":[]`)

	// ENA 2.4 has allowance counters but no SRD.
	old := NewWindow(fixture(t, "ena-2.4-no-srd.txt", 0), fixture(t, "ena-2.4-no-srd.txt", time.Second))
	assert.NotNil(t, old.Allowance)
	assert.False(t, old.HasSRD())

}

// TestWindowAllowanceReset: an allowance counter that restarted in the
// window is a lower bound; above 0 it proves the limit was hit, and the
// table and its note say "at least".
func TestWindowAllowanceReset(t *testing.T) {
	mk := func(at time.Duration, pps, resets uint64) *ethtool.Snapshot {
		return &ethtool.Snapshot{Time: time.Unix(0, 0).Add(at), Interface: "eth0", Stats: ethtool.Stats{
			{Name: "total_resets", Value: resets},
			{Name: "bw_in_allowance_exceeded"}, {Name: "bw_out_allowance_exceeded"},
			{Name: "pps_allowance_exceeded", Value: pps}, {Name: "conntrack_allowance_exceeded"},
			{Name: "linklocal_allowance_exceeded"}}}
	}
	// Went backwards: 300 packets shaped since the restart.
	w := NewWindow(mk(0, 5000, 0), mk(time.Second, 300, 0))
	assert.Equal(t, uint64(300), w.Allowance.PPSExceeded)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, w.LimitedBy)
	assert.Equal(t, "pps", w.LimitedByText())

	// A driver reset: pps may have restarted and climbed past its old
	// value; at least 50 were shaped either way.
	w = NewWindow(mk(0, 100, 0), mk(time.Second, 150, 1))
	assert.Equal(t, uint64(50), w.Allowance.PPSExceeded)
	assert.Equal(t, ethtool.AllowanceCounters(), w.Allowance.Reset)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, w.LimitedBy)

	b, err := json.Marshal(w)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"allowance_counters_reset":["bw_in_allowance_exceeded","bw_out_allowance_exceeded","pps_allowance_exceeded","conntrack_allowance_exceeded","linklocal_allowance_exceeded"]`)
}
