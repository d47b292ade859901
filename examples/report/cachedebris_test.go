package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// E3's text says, per connect-per-op run, the TIME_WAIT sockets it found and
// left, the wait for earlier runs' debris, and when the port search limited
// a run (issue 31).
func TestCacheTextDebris(t *testing.T) {
	run := func(before, after int, limited string) *cache.RunResult {
		return &cache.RunResult{Engine: "resp", Mode: cache.ConnectPerOp, Attempts: 10, Succeeded: 10, Ports: &cache.PortUsage{
			TimeWaitBefore: before, BlockedBefore: float64(before) / 28232,
			TimeWaitAfter: after, BlockedAfter: float64(after) / 28232,
			LimitedBy: limited,
		}}
	}
	conn := median.Summarize([]*cache.RunResult{run(7354, 21308, ""), run(21308, 22000, cache.LimitedByPorts)})
	conn.SettleWait = 61 * time.Second
	sec := &CacheSection{Endpoints: []*CacheEndpoint{{Label: "veth", Workloads: []*CacheWorkload{{Engine: "resp", Connect: conn}}}}}
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, sec))
	out := b.String()
	assert.Contains(t, out, "TIME_WAIT sockets towards the endpoint before -> after")
	assert.Contains(t, out, "veth resp: 7354 -> 21308 (26% -> 75%); 21308 -> 22000 (75% -> 78%)")
	assert.Contains(t, out, "waited 61 s for earlier runs' TIME_WAIT to clear")
	assert.Contains(t, out, "limited by: client ephemeral ports in 1 of 2 runs")
}

// Pooled rows and runs that could not read the ports print no debris line.
func TestCacheTextNoDebris(t *testing.T) {
	assert.Empty(t, debrisNote("x", nil))
	assert.Empty(t, debrisNote("x", median.Summarize([]*cache.RunResult{{Engine: "resp", Mode: cache.ConnectPerOp}})))
}
