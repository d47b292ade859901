package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/shard"
)

// runShard runs one shard of a sharded ping-pong: it waits for -start-at,
// runs once, and writes the shard's result with per-interval histograms.
func runShard(ctx context.Context, o options, cfg *latency.PingPongConfig, stdout, stderr io.Writer) error {
	sp := shard.Spec{Index: 0, Count: 1}
	var at time.Time
	var err error
	if o.shard != "" {
		if sp, err = shard.ParseSpec(o.shard); err != nil {
			return fmt.Errorf("-shard: %w", err)
		}
	}
	if o.startAt != "" {
		if at, err = time.Parse(time.RFC3339Nano, o.startAt); err != nil {
			return fmt.Errorf("-start-at: want RFC 3339, e.g. 2026-12-02T15:00:00Z: %w", err)
		}
	}
	if cfg.Duration <= 0 {
		return fmt.Errorf("a sharded run is timed: use -t, not -n")
	}
	var res *latency.PingPongResult
	var runErr error
	scfg := &shard.Config{Shard: sp, StartAt: at, Duration: cfg.Duration, Interval: o.interval}
	out, err := shard.Run(ctx, scfg, func(ctx context.Context, record func(time.Time, time.Duration, error)) error {
		// Each round trip lands in the interval its reply came back in.
		next := cfg.OnMessage
		c := *cfg
		c.OnMessage = func(sent time.Time, rtt time.Duration, err error) {
			record(sent.Add(rtt), rtt, err)
			if next != nil {
				next(sent, rtt, err)
			}
		}
		res, runErr = latency.PingPong(ctx, o.addr, &c)
		return runErr
	})
	switch {
	case errors.Is(err, shard.ErrPastStart):
		return fmt.Errorf("-start-at: %w", err)
	case res == nil: // a bad setting, or cancelled before the start
		return err
	}
	out.Tool = "pingpong"
	if res.SendLateness != nil {
		out.SendLatenessP99, out.ResponseP99 = &res.SendLateness.P99, &res.P99
	}
	var jerr error
	if out.Detail, jerr = json.Marshal(res); jerr != nil {
		return jerr
	}
	late := time.Duration(0)
	if !at.IsZero() {
		late = out.Start.Sub(at)
	}
	fmt.Fprintf(stderr, "pingpong: shard %s started %s, %v after -start-at; %d round trips\n",
		sp, out.Start.UTC().Format(time.RFC3339Nano), late.Round(time.Microsecond), len(res.Samples))
	if err := writeShard(o.out, stdout, out); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	return err
}

// writeShard writes r to path, or to stdout for "-" or no path.
func writeShard(path string, stdout io.Writer, r *shard.Result) error {
	if path == "" {
		path = "-"
	}
	return shard.WriteFile(path, stdout, r)
}
