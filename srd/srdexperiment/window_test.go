package srdexperiment

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExperimentWindows feeds the study's ENA snapshots through the
// snapshot source and checks one window per phase: SRD deltas that add up
// to the target's whole window, allowance deltas under their counter names
// and the pps allowance named as the limit of the cross-AZ phases.
func TestExperimentWindows(t *testing.T) {
	res, err := Run(context.Background(), e1Targets, e1Fakes(t))
	require.NoError(t, err)
	for _, row := range res.Targets {
		require.Len(t, row.Windows, 3, row.Name)
		var tx, el, fb, pps uint64
		for i, w := range row.Windows {
			assert.Equal(t, []string{"1-flow", "n-stream", "rtt"}[i], w.Phase)
			assert.Equal(t, srd.VerdictCarried, w.Verdict, "%s %s", row.Name, w.Phase)
			require.NotNil(t, w.Allowance)
			tx += w.TxPktsDelta
			el += w.EligibleTxPktsDelta
			fb += w.FallbackPkts
			pps += w.Allowance.PPSExceeded
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
	assert.Equal(t, 20*time.Second, cross.Duration, "35% of the 50 s window")

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
	w := srd.NewWindow(fixture(t, "veth.txt", 0), fixture(t, "veth.txt", time.Second))
	res := &Result{Targets: []TargetResult{{Target: Target{Name: "veth"}, Windows: []srd.Window{withPhase(w, "1-flow")}}}}
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
	src := Replay(a, b, nil)
	got, err := src("eth0")
	require.NoError(t, err)
	assert.Same(t, a, got)
	got, err = src("eth0")
	require.NoError(t, err)
	assert.Same(t, b, got)
	_, err = src("eth0")
	assert.ErrorContains(t, err, "srdexperiment: replay: snapshot 2 is nil")
	_, err = src("eth0")
	assert.ErrorContains(t, err, "srdexperiment: replay: eth0: all 3 snapshots were used")
}

// TestWindowAllowanceReset: a restarted allowance counter reads ">=" in
// the table, and a note says its delta is a lower bound.
func TestWindowAllowanceReset(t *testing.T) {
	mk := func(at time.Duration, pps, resets uint64) *ethtool.Snapshot {
		return &ethtool.Snapshot{Time: time.Unix(0, 0).Add(at), Interface: "eth0", Stats: ethtool.Stats{
			{Name: "total_resets", Value: resets},
			{Name: "bw_in_allowance_exceeded"}, {Name: "bw_out_allowance_exceeded"},
			{Name: "pps_allowance_exceeded", Value: pps}, {Name: "conntrack_allowance_exceeded"},
			{Name: "linklocal_allowance_exceeded"}}}
	}
	w := srd.NewWindow(mk(0, 100, 0), mk(time.Second, 150, 1))
	res := &Result{Targets: []TargetResult{{Target: Target{Name: "reset"}, Windows: []srd.Window{w}}}}
	var buf bytes.Buffer
	require.NoError(t, res.WriteWindows(&buf))
	out := buf.String()
	assert.Regexp(t, `>=\+0\s+>=\+0\s+>=\+50\s+>=\+0\s+>=\+0\s+-\s+pps`, out)
	assert.Contains(t, out, "restarted, or may have (a driver reset), in the window: their deltas (>=) are lower bounds")
}

// TestWindowJSONPhaseFirst pins a phase window's JSON: srd.Window's object
// with "phase" first, and no "phase" key without one.
func TestWindowJSONPhaseFirst(t *testing.T) {
	bare := srd.NewWindow(nil, nil)
	w := withPhase(bare, "rtt")
	b, err := json.Marshal(w)
	require.NoError(t, err)
	inner, err := json.Marshal(bare)
	require.NoError(t, err)
	assert.Equal(t, `{"phase":"rtt",`+string(inner[1:]), string(b))
	assert.NotContains(t, string(inner), `"phase"`, "no phase, no key")
	var back srd.Window
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, w, back)
}

func withPhase(w srd.Window, phase string) srd.Window {
	w.Phase = phase
	return w
}
