package ethtool

import (
	"context"
	"fmt"
	"time"
)

// Watch samples iface every interval and hands fn the Delta between each
// sample and the one before, until ctx ends. It returns nil when ctx ends and
// the first read error otherwise (the errors of Client.Snapshot).
//
// Watch is cheap enough to run for days: it keeps two snapshots and one Delta
// and reuses them, so a steady interface costs no allocation per sample. The
// Delta given to fn, and its slices, are only valid until fn returns; keep a
// copy with Delta.Clone. fn runs on the calling goroutine; a slow fn delays
// the next sample instead of piling them up.
func (c *Client) Watch(ctx context.Context, iface string, interval time.Duration, fn func(Delta)) error {
	// Driver information cannot change while the interface exists: each of
	// the two reused snapshots asks for it once.
	return watch(ctx, interval, func(s *Snapshot) error { return c.snapshotInto(iface, s, s.Interface != iface) }, fn)
}

// Watch opens a Client, runs Client.Watch and closes it. On systems other
// than linux it returns an error matching errors.ErrUnsupported.
func Watch(ctx context.Context, iface string, interval time.Duration, fn func(Delta)) error {
	c, err := New()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Watch(ctx, iface, interval, fn)
}

// watch is Watch with the sampling as a parameter, for tests.
func watch(ctx context.Context, interval time.Duration, sample func(*Snapshot) error, fn func(Delta)) error {
	if interval <= 0 {
		return fmt.Errorf("ethtool: watch interval must be positive, got %v", interval)
	}
	prev, cur := &Snapshot{}, &Snapshot{}
	if err := sample(prev); err != nil {
		return err
	}
	var d Delta
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := sample(cur); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		d.compute(prev, cur)
		fn(d)
		prev, cur = cur, prev
	}
}
