package main

import (
	"bytes"
	"testing"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/stretchr/testify/assert"
)

func TestPrintDebris(t *testing.T) {
	r := &cache.RunResult{Engine: "resp", Mode: cache.ConnectPerOp, Attempts: 1, Succeeded: 1, Ports: &cache.PortUsage{
		TimeWaitBefore: 21308, BlockedBefore: 0.75,
		TimeWaitAfter: 22000, BlockedAfter: 0.78,
		LimitedBy: cache.LimitedByPorts,
	}}
	var b bytes.Buffer
	printDebris(&b, &output{Results: []*row{rowOf(r)}})
	assert.Contains(t, b.String(), "resp connect: 21308 -> 22000 (75% -> 78%); limited by: client ephemeral ports in 1 of 1 runs")

	b.Reset()
	printDebris(&b, &output{Results: []*row{rowOf(&cache.RunResult{Engine: "resp", Mode: cache.Pooled})}})
	assert.Empty(t, b.String(), "pooled runs have no debris")
}
