package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/latency/shard"
)

// exitPastStart is the exit status of a shard refused because its
// -start-at had passed: deploy/'s Indexed Job fails the Job on it rather
// than retry a start that can only be later still.
const exitPastStart = 3

// shardFlags are the flags of a sharded run (-shard, -start-at, -out,
// -interval); any of them makes the run one shard's: one engine, one mode,
// one run, written to -out.
type shardFlags struct {
	spec, startAt, out string
	interval           time.Duration
	modeSet, runsSet   bool
}

func addShardFlags(fs *flag.FlagSet) *shardFlags {
	s := &shardFlags{}
	fs.StringVar(&s.spec, "shard", "", "run shard `I/N` of N: keys and connections of its own (e.g. 0/4)")
	fs.StringVar(&s.startAt, "start-at", "", "start at this wall-clock `time` (RFC 3339), the same for every shard; a past time is refused")
	fs.StringVar(&s.out, "out", "", "write the shard's result with per-interval histograms to `FILE` (- for stdout), for cachebench merge")
	fs.DurationVar(&s.interval, "interval", time.Second, "histogram interval of a sharded run, the same for every shard")
	return s
}

// visited notes the flags given that a sharded run interprets.
func (s *shardFlags) visited(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		s.modeSet = s.modeSet || f.Name == "mode"
		s.runsSet = s.runsSet || f.Name == "runs"
	})
}

func (s *shardFlags) active() bool {
	return s != nil && (s.spec != "" || s.startAt != "" || s.out != "")
}

// plan is a sharded run's checked settings.
type plan struct {
	spec    shard.Spec
	startAt time.Time
	cfg     cache.WorkloadConfig
}

// parseStartAt parses -start-at, an RFC 3339 time.
func parseStartAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339, e.g. 2026-12-02T15:00:00Z: %w", err)
	}
	return t, nil
}

// shardPlan checks the flags of a sharded run and builds its workload:
// the shard's own part of the key space (its own key prefix over
// KeySpace/N keys) and its own workers.
func shardPlan(o *options) (*plan, error) {
	p := &plan{spec: shard.Spec{Index: 0, Count: 1}}
	var err error
	if o.sh.spec != "" {
		if p.spec, err = shard.ParseSpec(o.sh.spec); err != nil {
			return nil, fmt.Errorf("-shard: %w", err)
		}
	}
	if o.sh.startAt != "" {
		if p.startAt, err = parseStartAt(o.sh.startAt); err != nil {
			return nil, fmt.Errorf("-start-at: %w", err)
		}
	}
	mode := o.modes[0]
	switch {
	case o.slo != nil:
		return nil, errors.New("-slo cannot be sharded: run the search on one host")
	case len(o.engines) > 1:
		return nil, errors.New("a sharded run takes one -engine (glide or resp)")
	case len(o.modes) > 1 && o.sh.modeSet:
		return nil, errors.New("a sharded run takes one -mode (pool or connect)")
	case len(o.modes) > 1:
		mode = cache.Pooled
	case o.sh.runsSet && o.runs != 1:
		return nil, errors.New("a sharded run is one run: repeat the whole sharded run for more")
	}
	const keySpace = 10000 // cache's default, split between the shards
	lo, hi := p.spec.Part(keySpace)
	p.cfg = cache.WorkloadConfig{
		Engine: o.engines[0], Mode: mode, Workers: o.workers, Duration: o.dur,
		GetWeight: o.get, SetWeight: o.set, Rate: o.rate, Arrival: o.arrival,
		KeySpace: max(hi-lo, 1), KeyPrefix: fmt.Sprintf("netperfkit:%d/%d:", p.spec.Index, p.spec.Count),
		NoKernelView: !o.kernel,
	}
	return p, nil
}

// runShard runs one shard: it waits for -start-at, runs the workload once
// into per-interval histograms and writes the shard's result to -out.
func runShard(ctx context.Context, ep *cache.Endpoint, o *options, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "cachebench:", err)
		return code
	}
	p, err := shardPlan(o)
	if err != nil {
		return fail(2, err)
	}
	var res *cache.RunResult
	var runErr error
	cfg := &shard.Config{Shard: p.spec, StartAt: p.startAt, Duration: p.cfg.Duration, Interval: o.sh.interval}
	out, err := shard.Run(ctx, cfg, func(ctx context.Context, record func(time.Time, time.Duration, error)) error {
		p.cfg.OnOperation = func(start, end time.Time, err error) { record(end, end.Sub(start), err) }
		res, runErr = cache.Run(ctx, ep, &p.cfg)
		return runErr
	})
	switch {
	case errors.Is(err, shard.ErrPastStart):
		return fail(exitPastStart, fmt.Errorf("-start-at: %w", err))
	case errors.Is(err, shard.ErrInvalid):
		return fail(2, err)
	case res == nil: // cancelled before the start
		return fail(stoppedStatus(ctx), err)
	}
	out.Tool = "cachebench"
	if s := res.Schedule; s != nil {
		out.SendLatenessP99, out.ResponseP99 = &s.ClientLateness.P99, &s.Response.P99
	}
	var jerr error
	if out.Detail, jerr = json.Marshal(res); jerr != nil {
		return fail(1, jerr)
	}
	fmt.Fprintf(stderr, "cachebench: shard %s (%s %s) started %s, %v after -start-at; %d operations, %d errors, %.0f ops/s\n",
		p.spec, cachecli.Name(p.cfg.Engine), p.cfg.Mode, out.Start.UTC().Format(time.RFC3339Nano), lateBy(out),
		res.Succeeded, res.Errors, res.OpsPerSec)
	if err := writeShard(o.sh.out, stdout, out); err != nil {
		return fail(1, err)
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return fail(stoppedStatus(ctx), runErr)
	case err != nil: // the run's error, or no operation recorded
		return fail(1, err)
	}
	return 0
}

// lateBy is how late the shard started after -start-at (zero without one).
func lateBy(r *shard.Result) time.Duration {
	if r.StartAt.IsZero() {
		return 0
	}
	return r.Start.Sub(r.StartAt).Round(time.Microsecond)
}

// writeShard writes r to path, or to stdout for "-" or no path.
func writeShard(path string, stdout io.Writer, r *shard.Result) error {
	if path == "" {
		path = "-"
	}
	return shard.WriteFile(path, stdout, r)
}
