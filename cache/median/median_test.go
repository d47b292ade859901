package median_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

func run(p50, p99, ops float64, attempts, errs int64, kinds map[cache.ErrorKind]int64) *cache.RunResult {
	return &cache.RunResult{Engine: "resp", Mode: cache.Pooled, OpsPerSec: ops, Attempts: attempts, Errors: errs,
		ErrorsByKind: kinds, Latency: latency.Summary{P50: time.Duration(p50 * 1e3), P99: time.Duration(p99 * 1e3)}}
}

func TestSummarize(t *testing.T) {
	runs := []*cache.RunResult{
		run(30, 90, 1000, 10, 1, map[cache.ErrorKind]int64{cache.ErrTimeout: 1}),
		run(10, 70, 3000, 20, 2, map[cache.ErrorKind]int64{cache.ErrTimeout: 1, cache.ErrConnection: 1}),
		run(20, 80, 2000, 30, 0, nil),
	}
	a := median.Summarize(runs)
	assert.Equal(t, latency.Range[time.Duration]{Median: 20 * time.Microsecond, Min: 10 * time.Microsecond, Max: 30 * time.Microsecond, N: 3}, a.P50)
	assert.Equal(t, 80*time.Microsecond, a.P99.Median)
	assert.Equal(t, latency.Range[float64]{Median: 2000, Min: 1000, Max: 3000, N: 3}, a.OpsPerSec)
	assert.Equal(t, int64(60), a.Attempts)
	assert.Equal(t, int64(3), a.Errors)
	assert.Equal(t, map[cache.ErrorKind]int64{cache.ErrTimeout: 2, cache.ErrConnection: 1}, a.ErrorsByKind)
	assert.Equal(t, 20*time.Microsecond, median.Summarize(runs[:2]).P50.Median, "even count: mean of the middle two")
	assert.Nil(t, median.Summarize(nil))
	assert.Nil(t, median.Summarize([]*cache.RunResult{nil}), "nil runs are skipped")

	b := &median.Result{P50: latency.Range[time.Duration]{Median: 23 * time.Microsecond}, P99: latency.Range[time.Duration]{Median: 425600 * time.Nanosecond},
		OpsPerSec: latency.Range[float64]{Median: 640}}
	c := median.Compare("node", a, "serverless", b)
	assert.InDelta(t, 1.15, c.P50Ratio, 1e-9)
	assert.InDelta(t, 5.32, c.P99Ratio, 1e-9)
	assert.InDelta(t, 0.32, c.OpsPerSecRatio, 1e-9)
	assert.Zero(t, median.Compare("z", &median.Result{}, "b", b).P50Ratio)
	assert.Equal(t, median.Comparison{Base: "x", Other: "y"}, median.Compare("x", nil, "y", nil))
}

// The JSON of a Result is the one the E3 rows always had: p50_us and
// p99_us as latency.Range[float64] objects in float microseconds (cachebench adds
// an open-loop run's schedule beside them).
func TestResultJSONShape(t *testing.T) {
	r1 := run(151.5, 273.25, 24506, 490120, 0, nil)
	r1.Schedule, r1.TargetRate = &latency.ScheduleResult{AchievedRate: 999.5, Late: 2, Service: latency.Summary{P99: 120126 * time.Nanosecond},
		ClientLateness: latency.Summary{P99: 3 * time.Microsecond}, ReceiveWake: latency.Summary{P99: 9 * time.Microsecond}}, 1000
	r2 := run(148, 290, 24800, 496000, 1, map[cache.ErrorKind]int64{cache.ErrTimeout: 1})
	r2.Schedule, r2.TargetRate = &latency.ScheduleResult{AchievedRate: 1000, Unstarted: 3, Service: latency.Summary{P99: 110 * time.Microsecond},
		ClientLateness: latency.Summary{P99: 5 * time.Microsecond}, ReceiveWake: latency.Summary{P99: 11 * time.Microsecond}}, 1000
	a := median.Summarize([]*cache.RunResult{r1, r2})
	a.Results = nil
	b, err := json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, `{"engine":"resp","mode":"pool",
		"p50_us":{"median":149.75,"min":148,"max":151.5,"n":2},
		"p99_us":{"median":281.625,"min":273.25,"max":290,"n":2},
		"ops_per_sec":{"median":24653,"min":24506,"max":24800,"n":2},
		"attempts":986120,"succeeded":0,"errors":1,"errors_by_kind":{"timeout":1},
		"runs_detail":null}`, string(b))
	var back median.Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, a.P50, back.P50)
	assert.Equal(t, 149750*time.Nanosecond, back.P50.Median)
}

// A run in which every operation failed (DENIED: a server in protected
// mode) takes no part in the percentiles; its counts and first error are
// kept, and a Failed result is compared with nothing.
func TestSummarizeFailedRuns(t *testing.T) {
	denied := run(0, 0, 0, 5, 5, map[cache.ErrorKind]int64{cache.ErrCommand: 5})
	denied.FirstError = "cache: command: command: cache: server replied: DENIED protected mode"
	ok1, ok2 := run(30, 90, 1000, 10, 0, nil), run(10, 70, 3000, 20, 0, nil)
	ok1.Succeeded, ok2.Succeeded = 10, 20
	a := median.Summarize([]*cache.RunResult{ok1, denied, ok2})
	assert.Equal(t, 2, a.P50.N, "the failed run has no percentiles")
	assert.Equal(t, 20*time.Microsecond, a.P50.Median)
	assert.Equal(t, 3, a.OpsPerSec.N, "its rate, zero, is real")
	assert.Equal(t, int64(35), a.Attempts)
	assert.Equal(t, int64(30), a.Succeeded)
	assert.Equal(t, int64(5), a.Errors)
	assert.Equal(t, denied.FirstError, a.FirstError)
	assert.False(t, a.Failed())

	f := median.Summarize([]*cache.RunResult{denied, denied})
	assert.True(t, f.Failed())
	assert.Zero(t, f.P50.N)
	assert.Zero(t, f.P99.Median)
	assert.Equal(t, median.Comparison{Base: "ok", Other: "denied"}, median.Compare("ok", a, "denied", f), "no ratio with a failed result")
	assert.Equal(t, median.Comparison{Base: "denied", Other: "ok"}, median.Compare("denied", f, "ok", a))
	var nilResult *median.Result
	assert.True(t, nilResult.Failed())
}

// deniedServer answers every command with DENIED, as a redis-server in
// protected mode answers a client from another host.
func deniedServer(t *testing.T) *cache.Endpoint {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				go func() { <-t.Context().Done(); c.Close() }()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") { // a command's array header
						if _, err := io.WriteString(c, "-DENIED Redis is running in protected mode\r\n"); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return &cache.Endpoint{Addr: l.Addr().String()}
}

// Against an endpoint that denies every command, Run stops at the first
// run, which failed: the error says so with the first failure, and the
// result holds that run's counts, with no latency.
func TestRunEveryOperationFailed(t *testing.T) {
	ep := deniedServer(t)
	n := 0
	a, err := median.Run(context.Background(), ep, &median.Config{Runs: 3, OnRun: func(cache.RunResult) { n++ },
		Workload: &cache.WorkloadConfig{Workers: 2, MaxOps: 50, Duration: 10 * time.Second}})
	require.ErrorIs(t, err, cache.ErrCommand)
	assert.ErrorContains(t, err, "all 50 operations failed")
	assert.ErrorContains(t, err, "DENIED")
	require.NotNil(t, a)
	assert.Zero(t, n, "OnRun hears of complete runs only")
	require.Len(t, a.Results, 1, "the failed run is kept")
	assert.True(t, a.Failed())
	assert.Equal(t, int64(50), a.Attempts)
	assert.Equal(t, int64(50), a.Errors)
	assert.Zero(t, a.Succeeded)
	assert.Contains(t, a.FirstError, "DENIED")
	assert.Zero(t, a.P50.N)
	assert.Zero(t, a.P99.Median)
}

func TestRunAndCompare(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	n := 0
	a, err := median.Run(context.Background(), s.Endpoint(), &median.Config{
		Workload: &cache.WorkloadConfig{Workers: 2, Duration: 150 * time.Millisecond, KeySpace: 100},
		OnRun:    func(cache.RunResult) { n++ },
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "three runs by default")
	assert.Equal(t, 3, a.P50.N)
	require.Len(t, a.Results, 3)
	var att int64
	for _, r := range a.Results {
		att += r.Attempts
		p50 := r.Latency.P50
		assert.GreaterOrEqual(t, p50, a.P50.Min-time.Nanosecond)
		assert.LessOrEqual(t, p50, a.P50.Max+time.Nanosecond)
	}
	assert.Equal(t, att, a.Attempts)
	cmp := median.Compare("a", a, "a", a)
	assert.InDelta(t, 1, cmp.P50Ratio, 1e-9)
	assert.InDelta(t, 1, cmp.OpsPerSecRatio, 1e-9)
}

// Cancelling returns promptly with the runs so far, the interrupted one
// included.
func TestRunCancel(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var (
		runs      atomic.Int32
		cancelled atomic.Int64
		once      sync.Once
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The third run is cancelled at its first command, once it has started
	// (the endpoint check before it sends none).
	ctx = cache.WithClientTrace(ctx, func(i cache.PhaseInfo) {
		if i.Phase == cache.PhaseCommand && runs.Load() == 2 {
			once.Do(func() {
				cancelled.Store(time.Now().UnixNano())
				cancel()
			})
		}
	}, nil)
	a, err := median.Run(ctx, s.Endpoint(), &median.Config{
		Runs:     100,
		Workload: &cache.WorkloadConfig{Workers: 2, Duration: 50 * time.Millisecond, KeySpace: 100},
		OnRun:    func(cache.RunResult) { runs.Add(1) },
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(time.Unix(0, cancelled.Load())), time.Second)
	require.NotNil(t, a, "the runs so far")
	assert.Len(t, a.Results, 3, "the two completed runs and the interrupted one")
	assert.Positive(t, a.Attempts)
	assert.Zero(t, a.Errors)
}

// Bad input is an error naming the field, never a panic or a run, and the
// result is an empty one whose fields can be read (docs/conventions.md).
func TestRunBadInput(t *testing.T) {
	ep := &cache.Endpoint{Addr: "127.0.0.1:1"}
	var nilCtx context.Context
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx    context.Context
		ep     *cache.Endpoint
		cfg    *median.Config
		want   string
		config bool
	}{
		{nilCtx, ep, nil, "context", false},
		{context.Background(), nil, nil, "Endpoint", true},
		{context.Background(), ep, &median.Config{Runs: -1}, "Config.Runs -1 is negative", true},
		{context.Background(), ep, &median.Config{Runs: 1001}, "Config.Runs 1001 is above the maximum of 1000", true},
		{context.Background(), ep, &median.Config{Workload: &cache.WorkloadConfig{Duration: -time.Second}}, "WorkloadConfig.Duration", true},
		{context.Background(), ep, &median.Config{Workload: &cache.WorkloadConfig{ValueSize: 1 << 40}}, "WorkloadConfig.ValueSize", true},
		{cancelled, ep, nil, "canceled", false},
	} {
		r, err := median.Run(c.ctx, c.ep, c.cfg)
		require.ErrorContains(t, err, c.want)
		if c.config {
			require.ErrorIs(t, err, cache.ErrInvalidConfig, c.want)
		}
		require.NotNil(t, r, c.want)
		assert.Equal(t, "resp", r.Engine)
		assert.Zero(t, r.P50.N+r.P99.N)
		assert.Zero(t, r.Attempts)
		assert.Empty(t, r.FirstError)
		assert.Zero(t, r.ErrorsByKind[cache.ErrTimeout])
	}
	_, err := median.Run(cancelled, ep, nil)
	require.ErrorIs(t, err, context.Canceled)
	var r latency.Range[time.Duration]
	require.Error(t, r.UnmarshalJSON([]byte(`"x"`)))
	require.ErrorContains(t, (*latency.Range[time.Duration])(nil).UnmarshalJSON([]byte(`{}`)), "nil *Range")
}
