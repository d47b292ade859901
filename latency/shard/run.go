package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Run runs one shard: it waits for cfg.StartAt (ErrPastStart for a time
// already past), calls load, which runs the shard's load for cfg.Duration
// and calls record once per operation, and returns the shard's Result,
// ready for WriteFile or Merge: its place, start, per-interval histograms,
// CPU use and host. Tool, Detail and the open-loop p99s are the caller's to
// fill in.
//
// record(at, d, err) records an operation that ended at at (a time.Now()
// reading) and took d, or failed (err not nil; d is then not used). It is
// safe for concurrent use and takes no lock; operations that end before
// the start or after cfg.Duration from it are not recorded.
//
// The Result is never nil. The error wraps ErrInvalid for a nil ctx,
// load or cfg or a cfg field out of range (named), ErrPastStart, ctx's
// error when it ends before the start, and load's error; when load fails,
// or records nothing, Result.Error says so, and Merge names the shard as
// failed.
func Run(ctx context.Context, cfg *Config, load func(ctx context.Context, record func(at time.Time, d time.Duration, err error)) error) (*Result, error) {
	r := &Result{}
	switch {
	case ctx == nil:
		return r, fmt.Errorf("%w Run: nil context", ErrInvalid)
	case cfg == nil:
		return r, fmt.Errorf("%w Run: nil config (Config.Duration is required)", ErrInvalid)
	case load == nil:
		return r, fmt.Errorf("%w Run: nil load", ErrInvalid)
	}
	r.Shard, r.StartAt, r.Interval = cfg.Shard, cfg.StartAt, cfg.Interval
	if r.Shard == (Spec{}) {
		r.Shard.Count = 1
	}
	if r.Interval == 0 {
		r.Interval = defaultInterval
	}
	if err := r.Shard.validate("Config.Shard"); err != nil {
		return r, err
	}
	if err := checkRun(time.Unix(1, 0), cfg.Duration, r.Interval); err != nil {
		return r, err
	}
	r.Host, _ = os.Hostname()
	started, _, err := waitUntil(ctx, cfg.StartAt, time.Now)
	if err != nil {
		r.Error = err.Error()
		return r, err
	}
	rec, err := newRecorder(started, cfg.Duration, r.Interval)
	if err != nil {
		return r, err
	}
	cpu := startCPU()
	loadErr := load(ctx, rec.record)
	end := time.Now()
	r.CPU = cpu.stop()
	r.Start, r.End = started.Round(0), started.Add(min(end.Sub(started), cfg.Duration)).Round(0)
	r.Intervals = rec.intervals(end)
	if loadErr == nil && !recordedAny(r.Intervals) {
		loadErr = errors.New("the load recorded no operation")
	}
	if loadErr != nil {
		r.Error = loadErr.Error()
		return r, fmt.Errorf("shard: shard %s: %w", r.Shard, loadErr)
	}
	return r, nil
}

func recordedAny(ivs []Interval) bool {
	for _, x := range ivs {
		if x.Count > 0 || x.Errors > 0 {
			return true
		}
	}
	return false
}
