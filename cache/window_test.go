package cache_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// debugServer starts a server that accepts DEBUG SLEEP.
func debugServer(t *testing.T) *cachetest.Server {
	return cachetest.NewServer(t, &cachetest.Config{ExtraArgs: []string{"--enable-debug-command", "yes"}})
}

// stallAfter makes the server stop answering for stall once n commands of
// the run that ctx traces have been answered (DEBUG SLEEP blocks the whole
// server): the stall starts once the run is under way, however slowly the
// machine runs it, and no timer can fire it late. The connection that
// sends DEBUG SLEEP is opened now, before the run, so that the hook only
// writes one command. The returned context carries the trace.
func stallAfter(t *testing.T, s *cachetest.Server, n int, stall time.Duration) context.Context {
	c, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	cmd := fmt.Sprintf("DEBUG SLEEP %g\r\n", stall.Seconds())
	var (
		mu   sync.Mutex
		seen int
	)
	return cache.WithClientTrace(context.Background(), nil, func(i cache.PhaseInfo) {
		if i.Phase != cache.PhaseCommand || i.Err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == n {
			_, err := c.Write([]byte(cmd))
			assert.NoError(t, err)
		}
	})
}

// Issue 12 item 10: a server that stops answering near the end of the
// window leaves operations in flight that time out after it. They are
// counted as errors, but ops/s is the successes over the window, not over
// the window plus the timeout.
func TestOpsPerSecOverWindowNotDrain(t *testing.T) {
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		t.Run(string(mode), func(t *testing.T) {
			s := debugServer(t)
			ep := endpointFor(s)
			ep.RequestTimeout, ep.ConnectTimeout = 1500*time.Millisecond, 1500*time.Millisecond
			cfg := shortRun(mode)
			cfg.Duration = time.Second
			// The server sleeps for 2 s from the tenth answered command,
			// early in the 1 s window: the operations in flight then time
			// out 1.5 s after they started, after the window, and no other
			// starts in it.
			ctx := stallAfter(t, s, 10, 2*time.Second)
			r, err := cache.Run(ctx, ep, cfg)
			require.NoError(t, err)
			t.Logf("%s: elapsed %v, window %v, %d attempts, %d errors %v, %.0f ops/s",
				mode, r.Elapsed, r.Window, r.Attempts, r.Errors, r.ErrorsByKind, r.OpsPerSec)
			require.Positive(t, r.ErrorsByKind[cache.ErrTimeout], "operations in flight timed out: %v", r.ErrorExamples)
			require.Greater(t, r.Elapsed, r.Window+400*time.Millisecond, "the run drained after its window")
			assert.Equal(t, cfg.Duration, r.Window)
			succeeded := r.Attempts - r.Errors
			assert.Equal(t, succeeded, r.SucceededInWindow, "every success came before the stall")
			assert.InDelta(t, float64(r.SucceededInWindow)/r.Window.Seconds(), r.OpsPerSec, 1e-6)
			overElapsed := float64(succeeded) / r.Elapsed.Seconds()
			assert.Greater(t, r.OpsPerSec, overElapsed*1.3, "the drain does not dilute ops/s")
		})
	}
}
