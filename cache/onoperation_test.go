package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnOperationSeesEveryOperation checks that the hook hears of each
// attempt, closed and open loop, with a start before its end.
func TestOnOperationSeesEveryOperation(t *testing.T) {
	srv := cachetest.NewServer(t, nil)
	for _, rate := range []float64{0, 2000} {
		var n, bad atomic.Int64
		var mu sync.Mutex
		var errs int64
		cfg := &cache.WorkloadConfig{Workers: 2, MaxOps: 300, Duration: 10 * time.Second, Rate: rate,
			OnOperation: func(start, end time.Time, err error) {
				n.Add(1)
				if end.Before(start) {
					bad.Add(1)
				}
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}}
		res, err := cache.Run(context.Background(), srv.Endpoint(), cfg)
		require.NoError(t, err)
		assert.Equal(t, res.Attempts, n.Load(), "rate %v", rate)
		assert.Equal(t, res.Errors, errs)
		assert.Zero(t, bad.Load())
	}
}
