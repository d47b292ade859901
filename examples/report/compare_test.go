package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			require.NotNil(t, m.Test, m.Name)
			assert.Equal(t, m.Test.Significant, m.Verdict != "~", m.Name)
			assert.Equal(t, 2, m.Test.NOld, m.Name)
			assert.NotEmpty(t, m.Test.TooFew, "2 runs a side cannot show a change: %s", m.Name)
			assert.Equal(t, "~", m.Verdict, "2 runs a side never reach p < 0.05: %s", m.Name)
			assert.InDelta(t, m.Old.Median, m.Test.OldMedian, 1e-9, "benchmath's median is the report's: %s", m.Name)
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
	assert.Regexp(t, `\d+ of \d+ metrics changed \(p < 0.05\); \d+ measured once per report`, text)
	assert.Contains(t, text, "vs old")
	assert.Regexp(t, `~ \(p=\d\.\d{3} n=2\) `+tooFewMark, text, "benchstat's notation, flagged: two runs a side")
	assert.Contains(t, text, tooFewMark+" too few runs to tell a change")

	assert.Equal(t, 1, run(context.Background(), []string{"-compare", a}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-compare takes two report.json files")
	assert.Equal(t, 1, run(context.Background(), []string{"-compare", a, filepath.Join(dirs[0], "missing.json")}, &stdout, &stderr))
}
