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

// stallAt makes the server stop answering for stall, from at after the
// first command of the run that ctx traces (DEBUG SLEEP blocks the whole
// server). The connection that sends DEBUG SLEEP is opened now, before the
// run, so that the timer only writes one command: no dial can push the
// stall later on a starved machine. The returned context carries the trace.
func stallAt(t *testing.T, s *cachetest.Server, at, stall time.Duration) context.Context {
	c, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	cmd := fmt.Sprintf("DEBUG SLEEP %g\r\n", stall.Seconds())
	var once sync.Once
	return cache.WithClientTrace(context.Background(), &cache.ClientTrace{Start: func(i cache.PhaseInfo) {
		if i.Phase != cache.PhaseCommand {
			return
		}
		once.Do(func() {
			tm := time.AfterFunc(at, func() {
				_, err := c.Write([]byte(cmd))
				assert.NoError(t, err)
			})
			t.Cleanup(func() { tm.Stop() })
		})
	}})
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
			// The server sleeps from 0.4 s to 2.4 s, well inside the 1 s
			// window even when the timer fires late: the operations in
			// flight then time out at about 1.9 s, after the window.
			ctx := stallAt(t, s, 400*time.Millisecond, 2*time.Second)
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
