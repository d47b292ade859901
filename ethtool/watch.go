package ethtool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// defaultWatchInterval is WatchConfig.Interval's default.
const defaultWatchInterval = time.Second

// WatchConfig sets how Client.Watch samples. A nil *WatchConfig means one
// sample a second and no callback.
type WatchConfig struct {
	// Interval is the time between samples. Zero means 1 s.
	Interval time.Duration
	// OnDelta, if set, is called with the Delta between each sample and the
	// one before. It runs on the goroutine that called Watch; a slow
	// OnDelta delays the next sample instead of piling them up. The Delta
	// and its slices are only valid until OnDelta returns: keep a copy with
	// Delta.Clone.
	OnDelta func(Delta)
}

// Watch samples iface every cfg.Interval and hands cfg.OnDelta the Delta
// between each sample and the one before, until ctx ends; it then returns
// ctx.Err() at once. It returns earlier with the first read error (the
// errors of Client.Snapshot), and with an error for a nil ctx or a negative
// interval.
//
// Watch is cheap enough to run for days: it keeps two snapshots and one Delta
// and reuses them, so a steady interface costs no allocation per sample.
func (c *Client) Watch(ctx context.Context, iface string, cfg *WatchConfig) error {
	if err := c.check(); err != nil {
		return err
	}
	if ctx == nil {
		return errors.New("ethtool: Watch: nil context.Context ctx")
	}
	// Driver information cannot change while the interface exists: each of
	// the two reused snapshots asks for it once.
	return watch(ctx, cfg, func(s *Snapshot) error { return c.snapshotInto(iface, s, s.Interface != iface) })
}

// watch is Watch with the sampling as a parameter, for tests.
func watch(ctx context.Context, cfg *WatchConfig, sample func(*Snapshot) error) error {
	var c WatchConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Interval == 0 {
		c.Interval = defaultWatchInterval
	}
	if c.Interval < 0 {
		return fmt.Errorf("ethtool: WatchConfig.Interval must be positive, got %v", c.Interval)
	}
	prev, cur := &Snapshot{}, &Snapshot{}
	if err := sample(prev); err != nil {
		return err
	}
	var d Delta
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			// A tick and the cancel can be ready together, and select
			// picks either: no delta is delivered once ctx has ended.
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if err := sample(cur); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		d.compute(prev, cur)
		if c.OnDelta != nil {
			c.OnDelta(d)
		}
		prev, cur = cur, prev
	}
}
