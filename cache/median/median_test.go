package median_test

import (
	"context"
	"encoding/json"
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
	assert.Equal(t, latency.DurationRange{Median: 20 * time.Microsecond, Min: 10 * time.Microsecond, Max: 30 * time.Microsecond, N: 3}, a.P50)
	assert.Equal(t, 80*time.Microsecond, a.P99.Median)
	assert.Equal(t, latency.Range{Median: 2000, Min: 1000, Max: 3000, N: 3}, a.OpsPerSec)
	assert.Equal(t, int64(60), a.Attempts)
	assert.Equal(t, int64(3), a.Errors)
	assert.Equal(t, map[cache.ErrorKind]int64{cache.ErrTimeout: 2, cache.ErrConnection: 1}, a.ErrorsByKind)
	assert.Equal(t, 20*time.Microsecond, median.Summarize(runs[:2]).P50.Median, "even count: mean of the middle two")
	assert.Nil(t, median.Summarize(nil))
	assert.Nil(t, median.Summarize([]*cache.RunResult{nil}), "nil runs are skipped")

	b := &median.Result{P50: latency.DurationRange{Median: 23 * time.Microsecond}, P99: latency.DurationRange{Median: 425600 * time.Nanosecond},
		OpsPerSec: latency.Range{Median: 640}}
	c := median.Compare("node", a, "serverless", b)
	assert.InDelta(t, 1.15, c.P50Ratio, 1e-9)
	assert.InDelta(t, 5.32, c.P99Ratio, 1e-9)
	assert.InDelta(t, 0.32, c.OpsPerSecRatio, 1e-9)
	assert.Zero(t, median.Compare("z", &median.Result{}, "b", b).P50Ratio)
	assert.Equal(t, median.Comparison{Base: "x", Other: "y"}, median.Compare("x", nil, "y", nil))
}

// The JSON of a Result is the one the E3 rows always had: p50_us, p99_us
// and service_p99_us as latency.Range objects in float microseconds.
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
		"attempts":986120,"errors":1,"errors_by_kind":{"timeout":1},
		"target_rate":1000,"achieved_rate":{"median":999.75,"min":999.5,"max":1000,"n":2},
		"service_p99_us":{"median":115.063,"min":110,"max":120.126,"n":2},
		"late":2,"unstarted":3,"runs_detail":null,
		"client_lateness_p99_us":{"median":4,"min":3,"max":5,"n":2},
		"receive_wake_p99_us":{"median":10,"min":9,"max":11,"n":2}}`, string(b))
	var back median.Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, a.P50, back.P50)
	assert.Equal(t, *a.ServiceP99, *back.ServiceP99)
	assert.Equal(t, 149750*time.Nanosecond, back.P50.Median)

	// A median between two nanoseconds is rounded to one: Go durations
	// are whole nanoseconds.
	r1.Schedule.Service.P99, r2.Schedule.Service.P99 = 110001*time.Nanosecond, 110002*time.Nanosecond
	assert.Equal(t, 110002*time.Nanosecond, median.Summarize([]*cache.RunResult{r1, r2}).ServiceP99.Median)
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
	ctx = cache.WithClientTrace(ctx, &cache.ClientTrace{Start: func(i cache.PhaseInfo) {
		if i.Phase == cache.PhaseCommand && runs.Load() == 2 {
			once.Do(func() {
				cancelled.Store(time.Now().UnixNano())
				cancel()
			})
		}
	}})
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

// Bad input is an error naming the field, never a panic or a run.
func TestRunBadInput(t *testing.T) {
	ep := &cache.Endpoint{Addr: "127.0.0.1:1"}
	var nilCtx context.Context
	_, err := median.Run(nilCtx, ep, nil)
	require.ErrorContains(t, err, "context")
	_, err = median.Run(context.Background(), nil, nil)
	require.ErrorContains(t, err, "Endpoint")
	_, err = median.Run(context.Background(), ep, &median.Config{Runs: -1})
	require.ErrorContains(t, err, "Config.Runs")
	_, err = median.Run(context.Background(), ep, &median.Config{Workload: &cache.WorkloadConfig{Duration: -time.Second}})
	require.ErrorContains(t, err, "WorkloadConfig.Duration")
	var r latency.DurationRange
	require.Error(t, r.UnmarshalJSON([]byte(`"x"`)))
	require.ErrorContains(t, (*latency.DurationRange)(nil).UnmarshalJSON([]byte(`{}`)), "nil *DurationRange")
}
