// Package median runs a cache workload several times and reports it the
// way the field study's E3 rows do: per engine and connection mode, the
// median of the runs' p50, p99 and ops/s with their min-max ranges, and
// attempts and errors summed over the runs. Compare puts two such results
// side by side as ratios (glide against resp on one endpoint gives the
// client library's own overhead).
//
// Entry points: Run, Summarize, Compare.
//
// It imports cache and latency (for latency.Range, the median-of-N type
// family) and nothing outside netperfkit. See docs/conventions.md for the
// conventions netperfkit's packages share.
package median

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/internal/ports"
	"github.com/netperfkit/netperfkit/latency"
)

// defaultRuns is Config.Runs' default, as the field study; maxRuns its
// maximum (every run's result is kept).
const (
	defaultRuns = 3
	maxRuns     = 1000
)

// Config configures Run. A nil *Config means three runs of cache's default
// workload.
type Config struct {
	// Workload is every run's workload. Nil means cache's defaults.
	Workload *cache.WorkloadConfig
	// Runs is the number of runs. Zero means 3; negative or above 1,000 is
	// an error wrapping cache.ErrInvalidConfig.
	Runs int
	// OnRun, when set, is called after each complete run, on the caller's
	// goroutine.
	OnRun func(cache.RunResult)
	// Settle, when positive, is the longest a connect-per-operation run
	// waits before it starts for the client host's sockets towards the
	// endpoint (an earlier run's TIME_WAIT debris, when the kernel may not
	// take its ports over: cache.PortUsage's BlockedBefore) to fall to a
	// quarter of the ephemeral port range or less, so that one run's debris does not
	// decide the next one's numbers (linux; no wait elsewhere). TIME_WAIT
	// lasts 60 s on linux. Zero means no wait; negative is an error
	// wrapping cache.ErrInvalidConfig.
	Settle time.Duration
}

// settleShare is the share of the ephemeral range Settle waits for: the
// issue 31 run that started at 26% of it was not slowed by the port
// search, the one that started at 75% was, 20 times.
const settleShare = 0.25

// Result is one engine and mode's E3 row. Run returns one whatever its
// error, and its methods are safe on a nil one.
type Result struct {
	Engine string         `json:"engine"`
	Mode   cache.ConnMode `json:"mode"`
	// P50 and P99 are the medians of the runs' latency percentiles, which
	// are those of their successful operations (response times in an
	// open-loop run, from each operation's intended start), over the runs
	// in which any operation succeeded: N counts those runs, and a run
	// whose every operation failed, or in which none ran, is in none.
	P50       latency.Range[time.Duration] `json:"p50_us"`
	P99       latency.Range[time.Duration] `json:"p99_us"`
	OpsPerSec latency.Range[float64]       `json:"ops_per_sec"`
	// Attempts, Succeeded and Errors are summed over the runs.
	Attempts     int64                     `json:"attempts"`
	Succeeded    int64                     `json:"succeeded"`
	Errors       int64                     `json:"errors"`
	ErrorsByKind map[cache.ErrorKind]int64 `json:"errors_by_kind"`
	// FirstError is the first run's first failure (cache.RunResult's
	// FirstError, of the first run that had one), empty when none failed.
	FirstError string `json:"first_error,omitempty"`
	// An open-loop run's schedule (achieved rate, late and unstarted
	// operations, service times) is in each of Results' Schedule.
	//
	// SettleWait is the time the runs waited for earlier runs' TIME_WAIT
	// debris to clear (Config.Settle), in total.
	SettleWait time.Duration `json:"settle_wait_ns,omitempty"`
	// KernelP50 and KernelP99 are the medians of the runs' kernel-to-kernel
	// percentiles (cache.RunResult.Kernel), over the runs that have that
	// view; nil when none has, and NoKernelStamps then says why (the first
	// run's reason).
	KernelP50      *latency.Range[time.Duration] `json:"kernel_p50_us,omitempty"`
	KernelP99      *latency.Range[time.Duration] `json:"kernel_p99_us,omitempty"`
	NoKernelStamps string                        `json:"no_kernel_stamps,omitempty"`
	// Results holds every run; P50.N and the others' N count them.
	Results []*cache.RunResult `json:"runs_detail"`
}

// Failed reports whether r is nil, or operations ran and every one failed:
// its latencies then describe nothing, a report shows Errors and FirstError
// in their place, and Compare leaves it out.
func (r *Result) Failed() bool {
	return r == nil || (r.Attempts > 0 && r.Errors >= r.Attempts)
}

// Summarize aggregates runs of one engine and mode, skipping nil entries. It
// returns nil when no run is left.
func Summarize(runs []*cache.RunResult) *Result {
	var rs, ok []*cache.RunResult
	for _, r := range runs {
		if r != nil {
			rs = append(rs, r)
		}
		if r != nil && r.Attempts > r.Errors {
			ok = append(ok, r) // its percentiles describe successes
		}
	}
	if len(rs) == 0 {
		return nil
	}
	a := &Result{Engine: rs[0].Engine, Mode: rs[0].Mode, ErrorsByKind: map[cache.ErrorKind]int64{}, Results: rs}
	for _, r := range rs {
		a.Attempts += r.Attempts
		a.Succeeded += r.Succeeded
		a.Errors += r.Errors
		for k, n := range r.ErrorsByKind {
			a.ErrorsByKind[k] += n
		}
		if a.FirstError == "" {
			a.FirstError = r.FirstError
		}
	}
	a.P50 = latency.AggregateFunc(ok, func(r *cache.RunResult) time.Duration { return r.Latency.P50 })
	a.P99 = latency.AggregateFunc(ok, func(r *cache.RunResult) time.Duration { return r.Latency.P99 })
	a.OpsPerSec = latency.AggregateFunc(rs, func(r *cache.RunResult) float64 { return r.OpsPerSec })
	summarizeKernel(a, ok)
	return a
}

// Run runs the workload cfg.Workload against ep cfg.Runs times with
// cache.Run (each run checks the endpoint before its window) and
// summarises the runs. It stops at the first run that fails (an endpoint
// that cannot be reached, or a run in which no operation succeeded),
// returning the runs so far with that error, the failed run included when
// it attempted any operation. When ctx ends it returns, within cache.Run's
// bound, the result of the runs so far, the interrupted one included, and
// an error matching ctx.Err(). The result is never nil: an error before
// any run gives an empty one (Failed).
func Run(ctx context.Context, ep *cache.Endpoint, cfg *Config) (*Result, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	empty := emptyResult(c.Workload)
	switch {
	case ctx == nil:
		return empty, errors.New("median: nil context")
	case ep == nil:
		return empty, fmt.Errorf("median: %w: nil Endpoint", cache.ErrInvalidConfig)
	case c.Runs < 0:
		return empty, fmt.Errorf("median: %w: Config.Runs %d is negative", cache.ErrInvalidConfig, c.Runs)
	case c.Runs > maxRuns:
		return empty, fmt.Errorf("median: %w: Config.Runs %d is above the maximum of %d", cache.ErrInvalidConfig, c.Runs, maxRuns)
	case c.Settle < 0:
		return empty, fmt.Errorf("median: %w: Config.Settle %v is negative", cache.ErrInvalidConfig, c.Settle)
	case c.Runs == 0:
		c.Runs = defaultRuns
	}
	var (
		all    []*cache.RunResult
		waited time.Duration
	)
	for range c.Runs {
		waited += settle(ctx, ep, &c)
		r, err := cache.Run(ctx, ep, c.Workload)
		if cerr := ctxErr(ctx); cerr != nil {
			all = append(all, r)
			return orEmpty(Summarize(all), empty), fmt.Errorf("median: %w", cerr)
		}
		if err != nil {
			if r.Attempts > 0 {
				all = append(all, r)
			}
			return orEmpty(Summarize(all), empty), err
		}
		if c.OnRun != nil {
			c.OnRun(*r)
		}
		all = append(all, r)
	}
	res := Summarize(all)
	res.SettleWait = waited
	return res, nil
}

// settle waits as c.Settle says before a connect-per-operation run and
// returns how long it waited; ctx ending is Run's to report.
func settle(ctx context.Context, ep *cache.Endpoint, c *Config) time.Duration {
	if c.Settle <= 0 || c.Workload == nil || c.Workload.Mode != cache.ConnectPerOp {
		return 0
	}
	e, ok := ports.ParseEndpoint(ep.Addr)
	if !ok {
		return 0
	}
	waited, _ := ports.Settle(ctx, e, settleShare, c.Settle)
	return waited
}

// emptyResult is the result of no run of w.
func emptyResult(w *cache.WorkloadConfig) *Result {
	r := &Result{Engine: "resp", Mode: cache.Pooled, ErrorsByKind: map[cache.ErrorKind]int64{}}
	if w != nil && w.Engine != nil {
		r.Engine = w.Engine.Name()
	}
	if w != nil && w.Mode != "" {
		r.Mode = w.Mode
	}
	return r
}

func orEmpty(r, empty *Result) *Result {
	if r == nil {
		return empty
	}
	return r
}

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed though ctx does not say so yet (cache.Run may return on its
// deadline an instant before ctx's timer fires).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// Comparison reports Other relative to Base as ratios Other/Base of the
// medians: a p50 ratio of 1.15 means Other's median latency is 15% higher.
type Comparison struct {
	Base           string  `json:"base"`
	Other          string  `json:"other"`
	P50Ratio       float64 `json:"p50_ratio"`
	P99Ratio       float64 `json:"p99_ratio"`
	OpsPerSecRatio float64 `json:"ops_per_sec_ratio"`
}

// Compare compares two results, labelled by the caller. A ratio whose base
// is zero, or whose base or other is nil or Failed, is zero: latencies of
// operations that all failed are compared with nothing.
func Compare(baseLabel string, base *Result, otherLabel string, other *Result) Comparison {
	c := Comparison{Base: baseLabel, Other: otherLabel}
	if base.Failed() || other.Failed() {
		return c
	}
	ratio := func(o, b float64) float64 {
		if b == 0 {
			return 0
		}
		return o / b
	}
	c.P50Ratio = ratio(float64(other.P50.Median), float64(base.P50.Median))
	c.P99Ratio = ratio(float64(other.P99.Median), float64(base.P99.Median))
	c.OpsPerSecRatio = ratio(other.OpsPerSec.Median, base.OpsPerSec.Median)
	return c
}
