package median_test

import (
	"context"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSettleNegative(t *testing.T) {
	_, err := median.Run(context.Background(), &cache.Endpoint{Addr: "127.0.0.1:1"}, &median.Config{Settle: -time.Second})
	assert.ErrorIs(t, err, cache.ErrInvalidConfig)
}

// Connect-per-op runs with Settle: a few connections leave far less than a
// quarter of the range in use, so no run waits, and every run reports its
// debris; pool runs never wait.
func TestSettleConnectRuns(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	res, err := median.Run(context.Background(), s.Endpoint(), &median.Config{Runs: 2, Settle: 2 * time.Second,
		Workload: &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 1, MaxOps: 20, Duration: 5 * time.Second}})
	require.NoError(t, err)
	assert.Less(t, res.SettleWait, time.Second)
	require.Len(t, res.Results, 2)
	for _, r := range res.Results {
		if assert.NotNil(t, r.Ports) {
			assert.Positive(t, r.Ports.TimeWaitAfter)
		}
	}
}
