package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func enaFixture(t *testing.T, name string) *ethtool.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "ethtool", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	s.Interface = "eth0"
	return s
}

// TestReportE1WindowsFromENAFixtures runs E1 against the in-process servers
// while the field study's ENA snapshots come in through the srd package's
// snapshot source: the 1-flow window gets the same-AZ counters (16 fallback
// packets, no allowance hit), the N-stream window the cross-AZ ones (pps
// allowance +1234) and the RTT window none.
func TestReportE1WindowsFromENAFixtures(t *testing.T) {
	out := t.TempDir()
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-skip", "matrix,cache", "-imds", "off", "-iface", "eth0",
		"-d", "200ms", "-rtt-d", "1s", "-streams", "2", "-out", out}, &stderr)
	require.NoError(t, err)
	o.snapshot = srdexperiment.Replay(enaFixture(t, "ena-2.17-same-az-before.txt"), enaFixture(t, "ena-2.17-same-az-after.txt"),
		enaFixture(t, "ena-2.17-cross-az-after.txt"), enaFixture(t, "ena-2.17-cross-az-after.txt"),
		// The RTT under load (-rtt-load on) has its own window.
		enaFixture(t, "ena-2.17-cross-az-after.txt"), enaFixture(t, "ena-2.17-cross-az-after.txt"))
	var stdout bytes.Buffer
	require.Equal(t, 0, execute(context.Background(), o, &stdout, &stderr), stderr.String())
	text := stdout.String()
	assert.Contains(t, text, "E1 ENA counter windows of eth0, one per phase")
	assert.Regexp(t, `loopback\s+1-flow\s+\S+\s+\+28195047\s+\+28195063\s+\+27991023\s+16\s+99\.999943\s+0 -> 1\s+\+0\s+\+0\s+\+0\s+\+0\s+\+0\s+136790\s+-\n`, text)
	assert.Regexp(t, `loopback\s+n-stream\s+\S+\s+\+24534321\s+\+24534339\s+\+\d+\s+18\s+99\.999926\s+1 -> 2\s+\+0\s+\+0\s+\+1234\s+\+0\s+\+0\s+136781\s+pps\n`, text)
	assert.Regexp(t, `loopback\s+rtt\s+\S+(\s+\+0){3}\s+0\s+-\s+2 -> 2(\s+\+0){5}\s+136781\s+-\n`, text, "counters present, nothing moved: +0 is a real zero here, and no coverage")
	assert.Regexp(t, `loopback\s+rtt-load\s+\S+(\s+\+0){3}\s+0\s+-\s+2 -> 2(\s+\+0){5}\s+136781\s+-\n`, text)
	assert.Regexp(t, `loopback(\s+\S+){6}\s+\+52729368\s+\+52729402\s+99\.99993\d+\s+3 \(ENA Express on, UDP on\)`, text, "the whole window")

	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Regexp(t, `\| path \| phase \| seconds \| SRD tx \| SRD eligible \|`, string(md), "report.md has the windows as a table")
	assert.Regexp(t, `\| loopback \| n-stream \| [0-9.]+ \| \+24534321 \| \+24534339 \|`, string(md))

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep struct {
		Paths struct {
			Targets []struct {
				Windows []map[string]any `json:"windows"`
			} `json:"targets"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Paths.Targets, 1)
	ws := rep.Paths.Targets[0].Windows
	require.Len(t, ws, 4)
	assert.Equal(t, "1-flow", ws[0]["phase"])
	assert.Equal(t, []any{}, ws[0]["limited_by"])
	assert.Equal(t, 16.0, ws[0]["fallback_pkts"])
	assert.Equal(t, []any{"pps_allowance_exceeded"}, ws[1]["limited_by"])
	assert.Equal(t, 1234.0, ws[1]["pps_allowance_exceeded"])
	assert.Equal(t, 136781.0, ws[1]["conntrack_allowance_available"])
	assert.Equal(t, 2.0, ws[1]["resource_utilization_percent"])
	assert.Equal(t, "no_eligible_traffic", ws[2]["verdict"])
	assert.Equal(t, "rtt-load", ws[3]["phase"], "the RTT under load has its own counter window")
	assert.Equal(t, "no_eligible_traffic", ws[3]["verdict"])
}
