package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

// An ErrorsByKind map prints its keys as the kinds alone (issue 39), while
// a classified error still says where it came from and matches its kind.
func TestErrorKindPrintsAlone(t *testing.T) {
	byKind := map[cache.ErrorKind]int64{cache.ErrConnectRefused: 3}
	assert.Equal(t, "map[connect_refused:3]", fmt.Sprint(byKind))
	assert.Equal(t, "connect_refused", cache.ErrConnectRefused.Error())
	err := fmt.Errorf("run: %w", &cache.Error{Phase: cache.PhaseConnect, Kind: cache.ErrConnectRefused, Addr: "127.0.0.1:1", Err: errors.New("refused")})
	assert.Equal(t, "run: cache: connect: connect_refused (127.0.0.1:1): refused", err.Error())
	assert.ErrorIs(t, err, cache.ErrConnectRefused)
}

// After a cancel Succeeded and Errors still split Attempts (issue 39: 1343
// + 0 of 1509): the operations the cancel cut short, in flight on a slow
// server, are not attempts, in either loop. A deadline cuts them too, on
// sockets whose deadline can fire an instant before ctx says it ended: the
// schedule then counted them among its responses while the run did not
// count them as errors.
func TestRunCancelSplitsAttempts(t *testing.T) {
	var served atomic.Int64
	addr, _ := fakeNode(t, func(args []string) string {
		if served.Add(1) > 20 {
			time.Sleep(20 * time.Millisecond) // keeps operations in flight at the cancel
		}
		if args[0] == "GET" {
			return "$-1\r\n"
		}
		return "+OK\r\n"
	})
	for _, tc := range []struct {
		rate     float64
		deadline bool
	}{{0, false}, {500, false}, {500, true}, {0, true}} {
		t.Run(fmt.Sprint("rate=", tc.rate, ",deadline=", tc.deadline), func(t *testing.T) {
			cfg := shortRun(cache.Pooled)
			cfg.Rate, cfg.Workers, cfg.Duration = tc.rate, 8, time.Minute
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			want := context.Canceled
			if tc.deadline {
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				want = context.DeadlineExceeded
			} else {
				base := served.Load()
				go func() {
					for served.Load() < base+60 {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
			}
			r, err := cache.Run(ctx, &cache.Endpoint{Addr: addr}, cfg)
			require.ErrorIs(t, err, want)
			require.Positive(t, r.Attempts)
			assert.Equal(t, r.Attempts, r.Succeeded+r.Errors, "Succeeded + Errors = Attempts after a cancel")
			t.Logf("%d attempts: %d succeeded, %d failed %v", r.Attempts, r.Succeeded, r.Errors, r.ErrorExamples)
			if r.Schedule != nil {
				assert.GreaterOrEqual(t, r.Schedule.Response.Observations, r.Attempts, "the schedule still holds the cut operations")
			}
		})
	}
}
