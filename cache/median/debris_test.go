package median

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/cache"
)

func TestDebrisText(t *testing.T) {
	run := func(before, after int, blocked float64, limited bool) *cache.RunResult {
		p := &cache.PortUsage{TimeWaitBefore: before, BlockedBefore: blocked, TimeWaitAfter: after, BlockedAfter: blocked + 0.5}
		if limited {
			p.LimitedBy = cache.LimitedByPorts
		}
		return &cache.RunResult{Ports: p}
	}
	r := &Result{Results: []*cache.RunResult{run(10, 7000, 0, false), nil, {}, run(7000, 21000, 0.25, true)}}
	assert.Equal(t, "10 -> 7000 (0% -> 50%); 7000 -> 21000 (25% -> 75%); limited by: client ephemeral ports in 1 of 2 runs", r.DebrisText())
	assert.Empty(t, (&Result{Results: []*cache.RunResult{{}}}).DebrisText(), "pooled runs read no ports")
	var nilR *Result
	assert.Empty(t, nilR.DebrisText())
}
