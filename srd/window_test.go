package srd

import (
	"bytes"
	"context"
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

// TestExperimentWindows feeds the study's ENA snapshots through the
// snapshot source and checks one window per phase: SRD deltas that add up
// to the target's whole window, allowance deltas under their counter names
// and the pps allowance named as the limit of the cross-AZ phases.
func TestExperimentWindows(t *testing.T) {
	res, err := RunExperiment(context.Background(), e1Targets, e1Fakes(t))
	require.NoError(t, err)
	for _, row := range res.Targets {
		require.Len(t, row.Windows, 3, row.Name)
		var tx, el, fb, pps uint64
		for i, w := range row.Windows {
			assert.Equal(t, []string{"1-flow", "n-stream", "rtt"}[i], w.Phase)
			assert.Equal(t, VerdictCarried, w.Verdict, "%s %s", row.Name, w.Phase)
			require.True(t, w.HasAllowance())
			tx += w.TxPktsDelta
			el += w.EligibleTxPktsDelta
			fb += w.FallbackPkts
			pps += w.PPSExceeded
		}
		assert.Equal(t, row.SRD.TxPktsDelta, tx, row.Name)
		assert.Equal(t, row.SRD.EligibleTxPktsDelta, el, row.Name)
		assert.Equal(t, row.SRD.FallbackPkts, fb, row.Name)
		if row.Name == "same AZ" {
			assert.Zero(t, pps)
			assert.Equal(t, uint64(16), fb)
			for _, w := range row.Windows {
				assert.Equal(t, []string{}, w.LimitedBy)
			}
		} else {
			assert.Equal(t, uint64(1234), pps)
			for _, w := range row.Windows {
				assert.Equal(t, []string{"pps_allowance_exceeded"}, w.LimitedBy, w.Phase)
				assert.Equal(t, "pps", w.LimitedByText())
			}
		}
	}
	cross := res.Targets[1].Windows[1]
	assert.Equal(t, 20.0, cross.WindowSeconds, "35% of the 50 s window")

	b, err := json.Marshal(res.Targets[1].Windows[1])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"phase", "tx_pkts_delta", "eligible_tx_pkts_delta", "rx_pkts_delta", "fallback_pkts",
		"resource_utilization_percent", "bw_in_allowance_exceeded", "bw_out_allowance_exceeded", "pps_allowance_exceeded",
		"conntrack_allowance_exceeded", "linklocal_allowance_exceeded", "conntrack_allowance_available", "limited_by"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, []any{"pps_allowance_exceeded"}, m["limited_by"])
	assert.Equal(t, 493.0, m["pps_allowance_exceeded"])

	var buf bytes.Buffer
	require.NoError(t, res.WriteWindows(&buf))
	out := buf.String()
	assert.Contains(t, out, "limited by")
	assert.Regexp(t, `cross AZ\s+n-stream\s+20\.0\s+\+\d+\s+\+\d+\s+\+\d+\s+\d+\s+99\.9999\d+\s+0 -> 2\s+\+0\s+\+0\s+\+493\s+\+0\s+\+0\s+136781\s+pps`, out)
	assert.Equal(t, 7, strings.Count(out, "\n"), "a header and six windows, no line about missing counters")
}

// TestWindowsWithoutCounters: an interface without ENA counters gives "-"
// cells, never +0, and one line per cause.
func TestWindowsWithoutCounters(t *testing.T) {
	veth := fixture(t, "veth.txt", 0)
	later := fixture(t, "veth.txt", time.Second)
	w := NewWindow(veth, later)
	assert.False(t, w.HasAllowance())
	assert.False(t, w.HasSRD())
	assert.Equal(t, []string{}, w.LimitedBy)
	assert.Equal(t, "-", w.LimitedByText())
	b, err := json.Marshal(w)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "pps_allowance_exceeded", "no counters, no zero delta")
	assert.Contains(t, string(b), `"limited_by":[]`)

	// ENA 2.4 has allowance counters but no SRD.
	old := NewWindow(fixture(t, "ena-2.4-no-srd.txt", 0), fixture(t, "ena-2.4-no-srd.txt", time.Second))
	assert.True(t, old.HasAllowance())
	assert.False(t, old.HasSRD())

	res := &ExperimentResult{Targets: []TargetResult{{Target: Target{Name: "veth"}, Windows: []Window{{Phase: "1-flow", CoverageReport: w.CoverageReport, AllowanceNote: w.AllowanceNote, LimitedBy: w.LimitedBy}}}}}
	var buf bytes.Buffer
	require.NoError(t, res.WriteWindows(&buf))
	out := buf.String()
	assert.NotContains(t, out, "+0")
	assert.Regexp(t, `veth\s+1-flow\s+1\.0(\s+-){13}`, out)
	assert.Contains(t, out, "SRD: no_srd_statistics: no ena_srd_* statistics")
	assert.Contains(t, out, "allowances: no *_allowance_exceeded statistics")
}

func TestReplay(t *testing.T) {
	a, b := &ethtool.Snapshot{Interface: "a"}, &ethtool.Snapshot{Interface: "b"}
	src := Replay(a, b)
	got, err := src("eth0")
	require.NoError(t, err)
	assert.Same(t, a, got)
	got, err = src("eth0")
	require.NoError(t, err)
	assert.Same(t, b, got)
	_, err = src("eth0")
	assert.ErrorContains(t, err, "srd: replay: eth0: all 2 snapshots were used")
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
	assert.Equal(t, uint64(300), w.PPSExceeded)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, w.LimitedBy)
	assert.Equal(t, "pps", w.LimitedByText())

	// A driver reset: pps may have restarted and climbed past its old
	// value; at least 50 were shaped either way.
	w = NewWindow(mk(0, 100, 0), mk(time.Second, 150, 1))
	assert.Equal(t, uint64(50), w.PPSExceeded)
	assert.Equal(t, ethtool.AllowanceCounters, w.Reset)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, w.LimitedBy)

	res := &ExperimentResult{Targets: []TargetResult{{Target: Target{Name: "reset"}, Windows: []Window{w}}}}
	var buf bytes.Buffer
	require.NoError(t, res.WriteWindows(&buf))
	out := buf.String()
	assert.Regexp(t, `>=\+0\s+>=\+0\s+>=\+50\s+>=\+0\s+>=\+0\s+-\s+pps`, out)
	assert.Contains(t, out, "restarted, or may have (a driver reset), in the window: their deltas (>=) are lower bounds")
}
