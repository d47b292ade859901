package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
)

// An open-loop row's JSON keeps the keys E3's rows always had beside
// median.Result's: target_rate, achieved_rate, service_p99_us, late,
// unstarted and the client's share, as latency.Range objects in float
// microseconds (moved from cache/median, issue 44).
func TestOpenRowJSON(t *testing.T) {
	r1 := &cache.RunResult{Engine: "resp", Mode: cache.Pooled, Attempts: 10, Succeeded: 10, TargetRate: 1000,
		Schedule: &latency.ScheduleResult{AchievedRate: 999.5, Late: 2, Service: latency.Summary{P99: 120126 * time.Nanosecond},
			ClientLateness: latency.Summary{P99: 3 * time.Microsecond}, ReceiveWake: latency.Summary{P99: 9 * time.Microsecond}}}
	r2 := &cache.RunResult{Engine: "resp", Mode: cache.Pooled, Attempts: 10, Succeeded: 10, TargetRate: 1000,
		Schedule: &latency.ScheduleResult{AchievedRate: 1000, Unstarted: 3, Service: latency.Summary{P99: 110 * time.Microsecond},
			ClientLateness: latency.Summary{P99: 5 * time.Microsecond}, ReceiveWake: latency.Summary{P99: 11 * time.Microsecond}}}
	r := rowOf(r1, r2)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "resp", got["engine"], "median.Result's keys are there")
	assert.InDelta(t, 1000, got["target_rate"], 0)
	assert.Equal(t, map[string]any{"median": 999.75, "min": 999.5, "max": 1000.0, "n": 2.0}, got["achieved_rate"])
	assert.Equal(t, map[string]any{"median": 115.063, "min": 110.0, "max": 120.126, "n": 2.0}, got["service_p99_us"])
	assert.InDelta(t, 2, got["late"], 0)
	assert.InDelta(t, 3, got["unstarted"], 0)
	assert.Equal(t, map[string]any{"median": 4.0, "min": 3.0, "max": 5.0, "n": 2.0}, got["client_lateness_p99_us"])
	assert.Equal(t, map[string]any{"median": 10.0, "min": 9.0, "max": 11.0, "n": 2.0}, got["receive_wake_p99_us"])
	// A median between two nanoseconds is rounded to one.
	r1.Schedule.Service.P99, r2.Schedule.Service.P99 = 110001*time.Nanosecond, 110002*time.Nanosecond
	assert.Equal(t, 110002*time.Nanosecond, rowOf(r1, r2).ServiceP99.Median)
	assert.Nil(t, rowOf(&cache.RunResult{Engine: "resp"}).AchievedRate, "closed loop: no schedule")
}
