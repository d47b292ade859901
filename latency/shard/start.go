package shard

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// waitUntil sleeps until the wall clock (now) reads at and returns the
// time it woke (with its monotonic reading, for measuring from it) and how
// late that was. A time already past is refused at once with an error
// wrapping ErrPastStart that says by how much: shards that start at
// different times are not a synchronised run, so a late shard must not
// start on its own. A zero at starts at once. When ctx ends first, it
// returns ctx's error.
func waitUntil(ctx context.Context, at time.Time, now func() time.Time) (time.Time, time.Duration, error) {
	if ctx == nil {
		return time.Time{}, 0, errors.New("shard: Run: nil context")
	}
	t := now()
	if at.IsZero() {
		return t, 0, ctx.Err()
	}
	if !t.Before(at) {
		return t, 0, fmt.Errorf("%w: %s was %v ago (now %s): pick a later time, the same for every shard",
			ErrPastStart, at.UTC().Format(time.RFC3339Nano), t.Sub(at).Round(time.Millisecond), t.UTC().Format(time.RFC3339Nano))
	}
	// Sleep on the monotonic clock, then correct for what the wall clock
	// did meanwhile (an NTP step); a timer alone wakes up to a
	// scheduler's quantum late, which the caller reports as skew.
	for {
		wait := at.Sub(now().Round(0))
		if wait <= 0 {
			break
		}
		tm := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			return now(), 0, ctx.Err()
		case <-tm.C:
		}
	}
	t = now()
	return t, t.Round(0).Sub(at), nil
}
