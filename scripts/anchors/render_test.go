package main

import (
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTablesAreTheRendering fails when README.md's or docs/benchmarks.md's
// comparison table is not, to the byte, the rendering of the committed
// docs/anchors.json: numbers are edited in the JSON (by a pass of this
// command), never in the documents. It compares text only.
func TestTablesAreTheRendering(t *testing.T) {
	f, err := readFile("../../docs/anchors.json")
	require.NoError(t, err)
	require.NotEmpty(t, f.Anchors, "docs/anchors.json has no entries")
	for _, target := range renderTargets {
		b, err := os.ReadFile("../../" + target.path)
		require.NoError(t, err)
		_, inside, _, err := between(string(b))
		require.NoError(t, err, target.path)
		assert.Equal(t, renderTable(f, target.linkPrefix, target.compact), inside,
			"%s: the table is not the rendering of docs/anchors.json (run: go run ./scripts/anchors -render)", target.path)
	}
}

// slug is GitHub's link target for a Markdown heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestEveryAnchorHasItsSection fails when a row's link would lead nowhere.
func TestEveryAnchorHasItsSection(t *testing.T) {
	b, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			have[slug(h)] = true
		} else if h, ok := strings.CutPrefix(line, "## "); ok {
			have[slug(h)] = true
		}
	}
	for _, a := range anchors {
		assert.True(t, have[a.section], "%s: docs/benchmarks.md has no heading #%s", a.name, a.section)
	}
	assert.Equal(t, "iperf3-321-client", slug("iperf3 3.21 client"))
	assert.Equal(t, "ethtool--s", slug("ethtool -S"))
}

func TestRenderRows(t *testing.T) {
	f := &File{Anchors: []*Entry{
		{Name: "iperf3-client", Title: "iperf3 3.21 client", Status: statusMeasured, Ratios: []Ratio{
			{Label: "goodput", Better: "higher", Median: 1.064, Min: 1.01, Max: 1.1, N: 5}}},
		{Name: "sockperf-server", Title: "sockperf server", Status: statusBusy,
			Load: &Load{PauseSeconds: 10, CPUBusyPct: 95, CPUStallPct: 80, Busy: true}},
		{Name: "node-exporter", Title: "node_exporter", Status: statusSkipped, Reason: "no node_exporter | on PATH"},
		{Name: "ethtool", Title: "ethtool -S", Status: statusBusy, Load: &Load{Busy: true},
			Agreement: &Agreement{What: "counters", Compared: 20, Agree: 20}},
	}}
	got := renderTable(f, "docs/benchmarks.md#", false)
	assert.Contains(t, got, "| iperf3 3.21 client | goodput (higher is better) | 1.06x [1.01-1.10] | 5 | [how](docs/benchmarks.md#iperf3-321-client) |\n")
	assert.Contains(t, got, "| sockperf server | ratio | busy: CPUs 95 % busy, 80 % stalled over a 10 s idle pause | 0 |")
	assert.Contains(t, got, `skipped: no node_exporter \| on PATH`)
	assert.Contains(t, got, "| ethtool -S | counters | agree: 20 of 20 | 1 |")

	f.Anchors[0].Ratios = append(f.Anchors[0].Ratios, Ratio{Label: "CPU per byte", Better: "lower", Median: 0.9, Min: 0.8, Max: 1, N: 5})
	compact := renderTable(f, "docs/benchmarks.md#", true)
	assert.Contains(t, compact, "| iperf3 3.21 client | goodput (higher is better): 1.06x [1.01-1.10]; CPU per byte (lower is better): 0.90x [0.80-1.00] | 5 | [how](docs/benchmarks.md#iperf3-321-client) |\n",
		"one row per anchor, its figures in one cell")
	assert.Contains(t, compact, "| ethtool -S | counters: agree: 20 of 20; ratio: busy: CPUs 0 % busy, 0 % stalled over a 0 s idle pause | 1, 0 |", "each figure's rounds, once")
	assert.Contains(t, compact, "| node_exporter | skipped: no node_exporter \\| on PATH | 0 |")
	assert.Equal(t, 2+len(f.Anchors), strings.Count(compact, "\n"), "a header of two lines and a row per anchor")
}

func TestBetween(t *testing.T) {
	doc := "a\n" + beginMark + "\nold\n" + endMark + "\nb\n"
	before, inside, after, err := between(doc)
	require.NoError(t, err)
	assert.Equal(t, "a\n", before)
	assert.Equal(t, "old\n", inside)
	assert.Equal(t, "\nb\n", after)
	_, _, _, err = between("no markers")
	assert.Error(t, err)
}
