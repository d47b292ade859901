package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingRun is one run with attempts of which errs failed (kind: errs
// DENIED replies, cancelled more cancels as the run ended), its latencies
// those of the error replies, as a server in protected mode gives them.
func failingRun(mode cache.ConnMode, attempts, errs, cancelled int64) *cache.RunResult {
	r := &cache.RunResult{Engine: "resp", Mode: mode, Attempts: attempts + cancelled, Errors: errs + cancelled, Succeeded: attempts - errs,
		ErrorsByKind: map[cache.ErrorKind]int64{}, ErrorExamples: map[cache.ErrorKind]string{},
		OpsPerSec: float64(attempts-errs) / 2,
		Latency:   latency.Summary{Observations: attempts, P50: 139 * time.Microsecond, P99: 1001 * time.Microsecond}}
	if errs > 0 {
		r.ErrorsByKind[cache.ErrServer] = errs
		r.ErrorExamples[cache.ErrServer] = "DENIED Redis is running in protected mode"
	}
	if cancelled > 0 {
		r.ErrorsByKind[cache.ErrCanceled] = cancelled
		r.ErrorExamples[cache.ErrCanceled] = "context canceled"
	}
	return r
}

// TestModeFailureRule pins the rule: a mode fails when more than half of
// its attempts failed, over all its runs; cancels as a run ends count for
// neither side; the first error is the first failing run's.
func TestModeFailureRule(t *testing.T) {
	sum := func(runs ...*cache.RunResult) *median.Result { return median.Summarize(runs) }
	assert.Nil(t, modeFailure(nil), "a mode that did not run did not fail")
	assert.Nil(t, modeFailure(sum(failingRun(cache.Pooled, 100, 0, 0))))
	assert.Nil(t, modeFailure(sum(failingRun(cache.Pooled, 100, 50, 0))), "half is not more than half")
	assert.Nil(t, modeFailure(sum(failingRun(cache.Pooled, 100, 50, 7))), "cancels at the window's end are no failures")

	f := modeFailure(sum(failingRun(cache.Pooled, 100, 51, 3)))
	require.NotNil(t, f, "51 of 100 failed")
	assert.Equal(t, ModeFailure{Failed: true, Attempts: 100, Errors: 51, FirstError: "DENIED Redis is running in protected mode"}, *f)
	assert.Equal(t, "51 of 100 attempts failed (51%); first error: DENIED Redis is running in protected mode", f.String())

	all := modeFailure(sum(failingRun(cache.Pooled, 0, 0, 0), failingRun(cache.Pooled, 171007, 171007, 0)))
	require.NotNil(t, all, "over all runs")
	assert.Equal(t, int64(171007), all.Errors)
	assert.Equal(t, "DENIED Redis is running in protected mode", all.FirstError, "from the first run that failed")

	assert.Nil(t, modeFailure(sum(failingRun(cache.Pooled, 0, 0, 4))), "no operation ran but cancels: nothing failed (the workload's error says why)")
	assert.Nil(t, modeFailure(&median.Result{}))

	first := failingRun(cache.Pooled, 10, 9, 0)
	first.FirstError = "cache: server replied: NOAUTH Authentication required."
	assert.Equal(t, first.FirstError, modeFailure(sum(failingRun(cache.Pooled, 10, 8, 0), first)).FirstError, "cache's first error, when it kept one, over the examples")
	long := &ModeFailure{Attempts: 1, Errors: 1, FirstError: strings.Repeat("é", 300)}
	assert.Equal(t, "1 of 1 attempts failed (100%); first error: "+strings.Repeat("é", maxNoteError)+"…", long.String(), "the notes cut a long error")
	glideErr := &ModeFailure{Attempts: 4, Errors: 4, FirstError: "connection: Received error for address `127.0.0.1:1`: timed out\n\n"}
	assert.Equal(t, "4 of 4 attempts failed (100%); first error: connection: Received error for address `127.0.0.1:1`: timed out", glideErr.String(), "one line")

	mixed := failingRun(cache.Pooled, 10, 9, 0)
	mixed.ErrorsByKind[cache.ErrTimeout] = 3
	mixed.ErrorsByKind[cache.ErrServer] = 6
	mixed.ErrorExamples[cache.ErrTimeout] = "i/o timeout"
	assert.Equal(t, "DENIED Redis is running in protected mode", modeFailure(sum(mixed)).FirstError, "the most frequent kind's")

	assert.True(t, runFailed(failingRun(cache.Pooled, 10, 6, 0)))
	assert.False(t, runFailed(failingRun(cache.Pooled, 10, 5, 9)))
}

// deniedSection is E3 with a healthy endpoint (ok) and one whose every
// operation failed (denied), as runCache leaves them.
func deniedSection(t *testing.T) *CacheSection {
	t.Helper()
	ok := func(mode cache.ConnMode, attempts int64, p50us int) *cache.RunResult {
		r := failingRun(mode, attempts, 0, 0)
		r.Latency.P50, r.Latency.P99 = time.Duration(p50us)*time.Microsecond, time.Duration(3*p50us)*time.Microsecond
		return r
	}
	okPool := median.Summarize([]*cache.RunResult{ok(cache.Pooled, 80000, 80), ok(cache.Pooled, 82000, 82)})
	okConn := median.Summarize([]*cache.RunResult{ok(cache.ConnectPerOp, 18000, 350), ok(cache.ConnectPerOp, 18200, 370)})
	var dp, dc []*cache.RunResult
	for range 4 {
		dp = append(dp, failingRun(cache.Pooled, 42000, 42000, 0))
		dc = append(dc, failingRun(cache.ConnectPerOp, 9000, 8000, 2))
	}
	denied := &CacheWorkload{Engine: "resp", Pool: median.Summarize(dp), Connect: median.Summarize(dc)}
	denied.PoolFailure, denied.ConnectFailure = modeFailure(denied.Pool), modeFailure(denied.Connect)
	eps := []*CacheEndpoint{
		{Label: "ok", Workloads: []*CacheWorkload{{Engine: "resp", Pool: okPool, Connect: okConn}}},
		{Label: "denied", Workloads: []*CacheWorkload{denied}},
	}
	return &CacheSection{Endpoints: eps, Comparisons: compareCache(eps, cacheOptions{Engines: []cache.Engine{nil}})}
}

// TestCompareCacheLeavesFailedModesOut checks that a failed mode takes part
// in no ratio and no U test, and that its row says why.
func TestCompareCacheLeavesFailedModesOut(t *testing.T) {
	sec := deniedSection(t)
	var rows []string
	for _, c := range sec.Comparisons {
		rows = append(rows, c.Kind+" "+c.Base+" / "+c.Other)
		if c.Base == "ok resp pool" || c.Base == "ok resp connect" {
			if c.Other == "ok resp connect" {
				assert.Empty(t, c.Missing)
				assert.Positive(t, c.P50Ratio)
				assert.NotNil(t, c.P50Test)
				continue
			}
		}
		assert.Contains(t, c.Missing, "denied resp", c.Base+" / "+c.Other)
		assert.Zero(t, c.P50Ratio)
		assert.Zero(t, c.P99Ratio)
		assert.Zero(t, c.OpsPerSecRatio)
		assert.Nil(t, c.P50Test)
		assert.Nil(t, c.P99Test)
		assert.Nil(t, c.OpsTest)
	}
	assert.Equal(t, []string{
		"connect/pool ok resp pool / ok resp connect",
		"connect/pool denied resp pool / denied resp connect",
		"endpoint ok resp pool / denied resp pool",
		"endpoint ok resp connect / denied resp connect",
	}, rows, "every ratio row is there, the failed ones with their reason")
	assert.Equal(t, "denied resp pool failed: 168000 of 168000 attempts failed (100%); denied resp connect failed: 32000 of 36000 attempts failed (89%)",
		sec.Comparisons[1].Missing, "the counts; the first error is the workload row's")

	// A mode that never ran (its engine's error) has no row, as before.
	notRun := &CacheWorkload{Engine: "resp", Error: "pool: cache: endpoint check: connect_refused"}
	eps := []*CacheEndpoint{sec.Endpoints[0], {Label: "dead", Workloads: []*CacheWorkload{notRun}}}
	cs := compareCache(eps, cacheOptions{Engines: []cache.Engine{nil}})
	require.Len(t, cs, 1)
	assert.Equal(t, "ok resp connect", cs[0].Other)
}

// TestFailedModeOutputs checks every output of a failed mode: the text
// table, report.md and report.html (built from it), and report.json, which
// keeps every old key and adds the failure.
func TestFailedModeOutputs(t *testing.T) {
	sec := deniedSection(t)
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, sec))
	text := b.String()
	assert.Regexp(t, `\n\s+denied\s+resp\s+4\s+FAILED\s+-\s+-\s+FAILED\s+-\s+-\s+204008\s`, text, "no latency or rate in a failed mode's cells")
	assert.NotContains(t, text, "139 [", "the error replies' p50 is not printed")
	assert.Contains(t, text, "FAILED: "+failedRule)
	assert.Contains(t, text, "denied resp pool: FAILED: 168000 of 168000 attempts failed (100%); first error: DENIED Redis is running in protected mode")
	assert.Contains(t, text, "denied resp connect: FAILED: 32000 of 36000 attempts failed (89%)")
	assert.Contains(t, text, "no ratio for ok resp pool vs denied resp pool: denied resp pool failed: 168000 of 168000")
	assert.Regexp(t, `endpoint\s+ok resp pool\s+denied resp pool\s+-\s+-\s+-\s+-\s+-\n`, text)
	assert.Regexp(t, `\n\s+ok\s+resp\s+2\s+81 \[80-82\]\s+243 \[240-246\]\s+40500 \[40000-41000\]\s+360 \[350-370\]`, text, "the healthy endpoint keeps its numbers")

	rep := &Report{Cache: sec}
	d, err := buildDocument(rep, nil)
	require.NoError(t, err)
	md := string(renderMarkdown(rep, d))
	assert.Contains(t, md, "| denied | resp | 4 | FAILED | - | - | FAILED | - | - |")
	assert.Contains(t, md, "denied resp pool: FAILED: 168000 of 168000 attempts failed (100%); first error: DENIED")
	assert.Contains(t, md, "no ratio for ok resp pool vs denied resp pool")
	html, err := renderHTML(rep, d, nil)
	require.NoError(t, err)
	assert.Contains(t, string(html), `<td data-label="pool p50 (us)">FAILED</td>`)
	assert.Contains(t, string(html), "denied resp pool: FAILED: 168000 of 168000 attempts failed (100%); first error: DENIED")

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	var raw struct {
		Cache struct {
			Endpoints []struct {
				Workloads []map[string]json.RawMessage `json:"workloads"`
			} `json:"endpoints"`
			Comparisons []map[string]any `json:"comparisons"`
		} `json:"cache"`
	}
	require.NoError(t, json.Unmarshal(js, &raw))
	w := raw.Cache.Endpoints[1].Workloads[0]
	for _, k := range []string{"engine", "pool", "connect", "pool_failure", "connect_failure"} {
		assert.Contains(t, w, k)
	}
	assert.NotContains(t, raw.Cache.Endpoints[0].Workloads[0], "pool_failure", "a healthy mode has none")
	var pool map[string]any
	require.NoError(t, json.Unmarshal(w["pool"], &pool))
	for _, k := range []string{"p50_us", "p99_us", "ops_per_sec", "attempts", "errors", "errors_by_kind", "runs_detail"} {
		assert.Contains(t, pool, k, "the old keys stay")
	}
	var pf map[string]any
	require.NoError(t, json.Unmarshal(w["pool_failure"], &pf))
	assert.Equal(t, map[string]any{"failed": true, "attempts": 168000.0, "errors": 168000.0, "first_error": "DENIED Redis is running in protected mode"}, pf)
	c := raw.Cache.Comparisons[1]
	assert.Contains(t, c["missing"], "denied resp pool failed")
	for _, k := range []string{"kind", "base", "other", "p50_ratio"} {
		assert.Contains(t, c, k, "the old keys stay")
	}
	assert.NotContains(t, c, "p50_test", "no U test")
}
