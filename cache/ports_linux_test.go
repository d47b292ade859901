package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connect-per-operation run reports the TIME_WAIT sockets it left towards
// the endpoint (each operation closes first, on the client); a pooled run
// reports none.
func TestRunReportsPortDebris(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	ep := endpointFor(s)
	r, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 1, MaxOps: 50, Duration: 5 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, r.Ports)
	assert.GreaterOrEqual(t, r.Ports.TimeWaitAfter-r.Ports.TimeWaitBefore, int(r.Succeeded)-1,
		"one TIME_WAIT per operation, the endpoint check's too")
	assert.GreaterOrEqual(t, r.Ports.BlockedAfter, r.Ports.BlockedBefore)

	p, err := cache.Run(context.Background(), ep, &cache.WorkloadConfig{Mode: cache.Pooled, Workers: 1, MaxOps: 5})
	require.NoError(t, err)
	assert.Nil(t, p.Ports)
}
