package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

// checkClusterE3 checks what E3 adds against its local clusters: every
// endpoint is a cluster (CLUSTER SLOTS is a phase), the nodes' counts of a
// connect-per-op operation, and the failover drill, whose failures add up
// by kind and by slot range and whose stopped slots recovered.
func checkClusterE3(t *testing.T, text string, c *CacheSection) {
	t.Helper()
	for _, ce := range c.Endpoints {
		require.NotNil(t, ce.Probe, ce.Label)
		assert.Positive(t, ce.Probe.Phases[cache.PhaseClusterSlots].Observations, "%s is a cluster", ce.Label)
		require.NotNil(t, ce.ConnectSteps, "%s: %s", ce.Label, ce.ConnectStepsError)
		steps := map[string]ConnectStep{}
		for _, s := range ce.ConnectSteps.Steps {
			steps[s.Name] = s
		}
		// Each operation connects to the seed and reads the topology once
		// (the run's endpoint check and slot-map read add one each), and
		// reaches another node for about two keys in three.
		for _, name := range []string{"seed TCP", "CLUSTER SLOTS", "command"} {
			assert.GreaterOrEqual(t, steps[name].PerOp, 0.9, "%s: %s", ce.Label, name)
		}
		assert.Positive(t, steps["node TCP"].PerOp, "%s: other nodes", ce.Label)
		assert.Less(t, steps["node TCP"].PerOp, 1.0, "%s: only when the key is elsewhere", ce.Label)
		for _, w := range ce.Workloads {
			if w.Connect == nil {
				continue
			}
			require.NotNil(t, w.ConnectCounts, "%s %s: the nodes' counts", ce.Label, w.Engine)
			assert.GreaterOrEqual(t, w.ConnectCounts.ConnectsPerOp, 0.9, "%s %s: a client's creation connects", ce.Label, w.Engine)
			assert.Positive(t, w.ConnectCounts.CommandsPerOp["cluster|slots"], "%s %s: and reads the topology", ce.Label, w.Engine)
		}
	}
	assert.Contains(t, text, "seen from its nodes")
	f := c.Failover
	require.NotNil(t, f, "the failover drill runs on the local plain cluster")
	assert.Contains(t, text, "through a failover")
	require.NotEmpty(t, f.Runs)
	for _, fr := range f.Runs {
		require.Empty(t, fr.Error, "%s %s", fr.Engine, fr.Mode)
		r := fr.Result
		require.NotNil(t, r, "%s %s", fr.Engine, fr.Mode)
		var kinds, ranges int64
		for _, n := range r.ErrorsByKind {
			kinds += n
		}
		for _, sr := range r.SlotRanges {
			ranges += sr.Failed
		}
		assert.Equal(t, r.Errors, kinds, "%s %s: the kinds add up", fr.Engine, fr.Mode)
		assert.Equal(t, r.Errors, ranges, "%s %s: the slot ranges add up", fr.Engine, fr.Mode)
		require.Contains(t, r.SlotRanges, fr.Slots, "%s %s: the stopped primary's slots", fr.Engine, fr.Mode)
		assert.Positive(t, fr.Promoted, "%s %s: the replica was promoted", fr.Engine, fr.Mode)
	}
}

func TestParseCounts(t *testing.T) {
	c := parseCounts("# Stats\r\ntotal_connections_received:42\r\n# Commandstats\r\ncmdstat_get:calls=7,usec=1,usec_per_call=0.1\r\ncmdstat_cluster|slots:calls=3,usec=9\r\nbogus:calls=1\r\n")
	require.Equal(t, int64(42), c.conns)
	require.Equal(t, map[string]int64{"get": 7, "cluster|slots": 3}, c.commands)

	before := []nodeCounts{{conns: 10, commands: map[string]int64{"get": 1, "info": 5}}, {conns: 1, commands: map[string]int64{}}}
	after := []nodeCounts{{conns: 31, commands: map[string]int64{"get": 11, "info": 6, "auth": 21}}, {conns: 2, commands: map[string]int64{"cluster|slots": 10}}}
	sc := serverCounts(before, after, 10, true)
	require.InDelta(t, 2.0, sc.ConnectsPerOp, 1e-9, "each reading's own connection left out")
	require.Equal(t, 1, sc.Nodes, "the second node accepted only the after reading's connection")
	require.Equal(t, map[string]float64{"get": 1, "auth": 2, "cluster|slots": 1}, sc.CommandsPerOp, "our INFO and AUTH left out")
	require.Equal(t, "2.00 connects over 1 node(s); AUTH 2.00, CLUSTER SLOTS 1.00, GET 1.00", sc.String())
	require.Nil(t, serverCounts(before, after, 0, false))
	require.Equal(t, "-", (*ServerCounts)(nil).String())
}
