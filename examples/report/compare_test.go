package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerdict(t *testing.T) {
	r := func(med, lo, hi float64) latency.Range { return latency.Range{Median: med, Min: lo, Max: hi, N: 3} }
	assert.Equal(t, "~", verdict(r(10, 9, 11), r(11, 10.5, 12), true), "overlapping ranges")
	assert.Equal(t, "better", verdict(r(10, 9, 11), r(13, 12, 14), true))
	assert.Equal(t, "worse", verdict(r(10, 9, 11), r(13, 12, 14), false), "higher latency is worse")
	assert.Equal(t, "worse", verdict(r(10, 9, 11), r(7, 6, 8), true))
	assert.Equal(t, "better", verdict(r(10, 9, 11), r(7, 6, 8), false))
	assert.Equal(t, "n=1", verdict(one(10), r(20, 19, 21), true), "one repetition has no range")
}

// TestReportCompare makes two real tiny runs and compares them.
func TestReportCompare(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-skip", "paths", "-imds", "off", "-engines", "resp",
			"-d", "200ms", "-cache-d", "200ms", "-runs", "2", "-probes", "5", "-rates", "50M", "-mstreams", "2", "-out", d}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
	}
	a, b := filepath.Join(dirs[0], "report.json"), filepath.Join(dirs[1], "report.json")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-compare", a, b, "-label", "ena-off,ena-on", "-json"}, &stdout, &stderr), stderr.String())
	var c Comparison
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &c))
	assert.Equal(t, "ena-off", c.Old)
	assert.Equal(t, "ena-on", c.New)
	names := map[string]MetricCompare{}
	for _, m := range c.Metrics {
		names[m.Name] = m
		assert.Contains(t, []string{"better", "worse", "~", "n=1"}, m.Verdict, m.Name)
		if m.Old.Median != 0 {
			assert.InDelta(t, m.New.Median/m.Old.Median, m.Ratio, 1e-9, m.Name)
		}
		if m.Old.N >= 2 && m.New.N >= 2 {
			disjoint := m.New.Min > m.Old.Max || m.New.Max < m.Old.Min
			assert.Equal(t, disjoint, m.Verdict != "~", m.Name)
		}
	}
	require.Contains(t, names, "E2 TCP 1 stream upload received")
	require.Contains(t, names, "E2 UDP target 50M upload loss")
	pool := ""
	for n := range names {
		if strings.HasSuffix(n, " resp pool ops/s") {
			pool = n
		}
	}
	require.NotEmpty(t, pool, "the cache workloads are compared")
	assert.Equal(t, 2, names[pool].Old.N)
	assert.True(t, names[pool].HigherIsBetter)
	assert.Equal(t, "n=1", names["E2 TCP 1 stream upload received"].Verdict)

	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"-compare", "-label", "x,y", a, b}, &stdout, &stderr))
	text := stdout.String()
	assert.Contains(t, text, "compare: old = x, new = y")
	assert.Contains(t, text, "new ÷ old")
	assert.Regexp(t, `\d+ of \d+ metrics changed beyond both runs' ranges`, text)

	assert.Equal(t, 1, run(context.Background(), []string{"-compare", a}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-compare takes two report.json files")
	assert.Equal(t, 1, run(context.Background(), []string{"-compare", a, filepath.Join(dirs[0], "missing.json")}, &stdout, &stderr))
}
