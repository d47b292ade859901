package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/shard"
)

// runShard runs one shard of a sharded ping-pong: it waits for -start-at,
// runs once, and writes the shard's result with per-interval histograms.
func runShard(ctx context.Context, o options, cfg *latency.PingPongConfig, stdout, stderr io.Writer) error {
	sp := shard.Single
	var at time.Time
	var err error
	if o.shard != "" {
		if sp, err = shard.ParseSpec(o.shard); err != nil {
			return fmt.Errorf("-shard: %w", err)
		}
	}
	if o.startAt != "" {
		if at, err = shard.ParseStartAt(o.startAt); err != nil {
			return fmt.Errorf("-start-at: %w", err)
		}
	}
	if cfg.Duration <= 0 {
		return fmt.Errorf("a sharded run is timed: use -t, not -n")
	}
	started, late, err := shard.WaitUntil(ctx, at)
	if err != nil {
		return fmt.Errorf("-start-at: %w", err)
	}
	cpu := shard.StartCPU()
	res, runErr := latency.PingPong(ctx, o.addr, cfg)
	end := time.Now()
	out := &shard.Result{Tool: "pingpong", Shard: sp, StartAt: at, Start: started, End: end, CPU: cpu.Stop()}
	out.Host, _ = os.Hostname()
	rec, err := shard.NewRecorder(started, max(end.Sub(started), time.Millisecond), &shard.RecorderConfig{Interval: o.interval})
	if err != nil {
		return err
	}
	placeSamples(rec, started, end.Sub(started), res.Samples)
	out.Interval, out.Intervals = rec.Interval(), rec.Intervals(end)
	if res.SendLateness != nil {
		out.SendLatenessP99, out.ResponseP99 = &res.SendLateness.P99, &res.P99
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if out.Detail, err = json.Marshal(res); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "pingpong: shard %s started %s, %v after -start-at; %d round trips\n",
		sp, started.UTC().Format(time.RFC3339Nano), late.Round(time.Microsecond), len(res.Samples))
	if err := writeShard(o.out, stdout, out); err != nil {
		return err
	}
	return runErr
}

// placeSamples records round trips in order over [start, start+d): each
// ends at its share of d, the sum of the round trips up to it over the sum
// of all of them (a closed loop sends the next when the last returns).
func placeSamples(rec *shard.Recorder, start time.Time, d time.Duration, samples []time.Duration) {
	var total float64
	for _, s := range samples {
		total += float64(max(s, 0))
	}
	if total <= 0 {
		return
	}
	var cum float64
	for _, s := range samples {
		cum += float64(max(s, 0))
		// The last ends a nanosecond before d, inside the measurement.
		at := start.Add(min(time.Duration(cum/total*float64(d)), d-1))
		rec.Record(at, s)
	}
}

// writeShard writes r to path, or to stdout for "-" or no path.
func writeShard(path string, stdout io.Writer, r *shard.Result) error {
	if path == "" {
		path = "-"
	}
	return shard.WriteFile(path, stdout, r)
}
