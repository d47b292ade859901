package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency"
)

const synTail = "p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN retransmission (1.02 s)"

// causesSection is E3 with two endpoints: "lab", whose first
// connect-per-op run had 14 SYNs sent again holding its p99 and whose
// probes had one, and "quiet", where nothing waited.
func causesSection() *CacheSection {
	run := func(mode cache.ConnMode, c cache.Causes) *cache.RunResult {
		return &cache.RunResult{Engine: "resp", Mode: mode, Attempts: 487, Succeeded: 487, OpsPerSec: 120,
			ErrorsByKind: map[cache.ErrorKind]int64{}, Causes: c,
			Latency: latency.Summary{Observations: 487, P50: 143 * time.Microsecond, P99: 1020 * time.Millisecond}}
	}
	syn := cache.Causes{Connects: map[string]int64{"syn_retransmit": 14}, Added: map[string]time.Duration{"syn_retransmit": 14 * 1020 * time.Millisecond},
		Events: map[string]int64{"syn_retransmit": 15}, Tail: synTail, From: "syn_retransmit: TCP_INFO after each connect"}
	dns := cache.Causes{Connects: map[string]int64{"dns_retry": 1}, Added: map[string]time.Duration{"dns_retry": 1010 * time.Millisecond},
		Events: map[string]int64{"dns_retry": 1}}
	probe := func(c cache.Causes) *cache.ProbeSummary {
		return &cache.ProbeSummary{Probes: 200, Succeeded: 200, Causes: c, Phases: map[cache.Phase]latency.Summary{
			cache.PhaseConnect: {Observations: 200, P50: 80 * time.Microsecond}, cache.PhaseCommand: {Observations: 200, P50: 50 * time.Microsecond}}}
	}
	labConnect := median.Summarize([]*cache.RunResult{run(cache.ConnectPerOp, syn), run(cache.ConnectPerOp, dns)})
	quietConnect := median.Summarize([]*cache.RunResult{run(cache.ConnectPerOp, cache.Causes{}), run(cache.ConnectPerOp, cache.Causes{})})
	pool := median.Summarize([]*cache.RunResult{run(cache.Pooled, cache.Causes{})})
	labProbe := probe(cache.Causes{Connects: map[string]int64{"syn_retransmit": 1}, Added: map[string]time.Duration{"syn_retransmit": 1015 * time.Millisecond},
		Tail: "p99 1.02 s: 1 of 200 connects (0.5 %) waited for a SYN retransmission (1.02 s)"})
	return &CacheSection{Endpoints: []*CacheEndpoint{
		{Label: "lab", Probe: labProbe, Medians: &cachecli.PhaseMedians{TCPUs: 80, GetUs: 50, TotalUs: 150},
			Workloads: []*CacheWorkload{{Engine: "resp", Pool: pool, Connect: labConnect, ConnectCauses: connectCauses(labConnect)}}},
		{Label: "quiet", Probe: probe(cache.Causes{}), Medians: &cachecli.PhaseMedians{TCPUs: 80, GetUs: 50, TotalUs: 150},
			Workloads: []*CacheWorkload{{Engine: "resp", Pool: pool, Connect: quietConnect, ConnectCauses: connectCauses(quietConnect)}}},
	}}
}

func TestConnectCausesSum(t *testing.T) {
	sec := causesSection()
	cc := sec.Endpoints[0].Workloads[0].ConnectCauses
	require.NotNil(t, cc)
	assert.Equal(t, map[string]int64{"syn_retransmit": 14, "dns_retry": 1}, cc.Connects, "summed over the runs")
	assert.Equal(t, map[string]int64{"syn_retransmit": 15, "dns_retry": 1}, cc.Events)
	assert.Equal(t, []string{"run 1: " + synTail}, cc.Tails, "the run whose p99 a cause holds")
	assert.Equal(t, "syn_retransmit: TCP_INFO after each connect", cc.From)
	quiet := sec.Endpoints[1].Workloads[0].ConnectCauses
	require.NotNil(t, quiet)
	assert.Nil(t, quiet.Connects)
	assert.Empty(t, quiet.Tails)
	assert.Nil(t, connectCauses(nil), "connect-per-op did not run")
	assert.Equal(t, "-", connectCausesCell(&CacheWorkload{}))

	assert.Equal(t, "14 SYN rtx (1.02 s), 1 DNS retry (1.01 s)", causesCell(cc.Connects, cc.Added))
	assert.Equal(t, "none", causesCell(nil, nil))
	assert.Equal(t, "2 listen queue (1.5 s), 1 budget (5 s), 3 new cause (203 ms)", causesCell(
		map[string]int64{"listen_queue": 2, "client_budget": 1, "new_cause": 3},
		map[string]time.Duration{"listen_queue": 3 * time.Second, "client_budget": 5 * time.Second, "new_cause": 609 * time.Millisecond}))
	assert.Equal(t, "-", probeCausesCell(nil))
}

// TestCausesOutputs checks the causes column and the tail notes in every
// output: the text tables, report.md and report.html (built from the same
// writes) and report.json.
func TestCausesOutputs(t *testing.T) {
	sec := causesSection()
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, sec))
	text := b.String()
	assert.Regexp(t, `\n\s+lab\s+resp\s+2\s.*\s1461\s+0\s+0\s+0\s+14 SYN rtx \(1\.02 s\), 1 DNS retry \(1\.01 s\)\n`, text, "the row's causes column")
	assert.Regexp(t, `\n\s+quiet\s+resp\s+2\s.*\s1461\s+0\s+0\s+0\s+none\n`, text, "a run where nothing waited says none")
	assert.Regexp(t, `\n\s+lab\s+200\s+0\s.*150\.0\s+1 SYN rtx \(1\.01 s\)\n`, text, "the probe row's causes")
	assert.Regexp(t, `\n\s+quiet\s+200\s+0\s.*150\.0\s+none\n`, text)
	assert.Contains(t, text, causesLegend)
	assert.Contains(t, text, "connect-per-op tails held by a cause:\n  lab resp connect: run 1: "+synTail+"\n")
	assert.Contains(t, text, "lab probes' total: p99 1.02 s: 1 of 200 connects (0.5 %) waited for a SYN retransmission (1.02 s)")
	assert.NotContains(t, text, "quiet resp connect:", "no note for a row whose tail no cause holds")

	rep := &Report{Cache: sec}
	d, err := buildDocument(rep, nil)
	require.NoError(t, err)
	md := string(renderMarkdown(rep, d))
	assert.Contains(t, md, "| 1461 | 0 | 0 | 0 | 14 SYN rtx (1.02 s), 1 DNS retry (1.01 s) |")
	assert.Contains(t, md, "| 1461 | 0 | 0 | 0 | none |")
	assert.Contains(t, md, "lab resp connect: run 1: p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN retransmission (1.02 s)")
	html, err := renderHTML(rep, d, nil)
	require.NoError(t, err)
	assert.Contains(t, string(html), `<td data-label="connect causes">14 SYN rtx (1.02 s), 1 DNS retry (1.01 s)</td>`)
	assert.Contains(t, string(html), `<td data-label="connect causes">none</td>`)
	assert.Contains(t, string(html), `<td data-label="causes">1 SYN rtx (1.01 s)</td>`)
	assert.Contains(t, string(html), "lab resp connect: run 1: p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN retransmission (1.02 s)")

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	var raw struct {
		Cache struct {
			Endpoints []struct {
				Workloads []struct {
					ConnectCauses *ConnectCauses `json:"connect_causes"`
				} `json:"workloads"`
			} `json:"endpoints"`
		} `json:"cache"`
	}
	require.NoError(t, json.Unmarshal(js, &raw))
	cc := raw.Cache.Endpoints[0].Workloads[0].ConnectCauses
	require.NotNil(t, cc)
	assert.Equal(t, int64(14), cc.Connects["syn_retransmit"])
	assert.Equal(t, []string{"run 1: " + synTail}, cc.Tails)
	assert.Empty(t, raw.Cache.Endpoints[1].Workloads[0].ConnectCauses.Connects)
}

func TestCausesNoTail(t *testing.T) {
	sec := causesSection()
	sec.Endpoints = sec.Endpoints[1:]
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, sec))
	assert.Contains(t, b.String(), "connect-per-op tails: no cause holds a p99")
	assert.NotContains(t, b.String(), "tails held by a cause")
}
