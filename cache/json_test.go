package cache_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
)

// The JSON of probe and run results keeps its keys and units: phases and
// totals in integer nanoseconds under ..._ns keys, latency statistics in
// float microseconds under ..._us keys, modes and error kinds as strings.
func TestResultJSONShape(t *testing.T) {
	pr := cache.ProbeResult{
		Start:  time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Addr:   "127.0.0.1:6379",
		Phases: map[cache.Phase]time.Duration{cache.PhaseConnect: 120 * time.Microsecond, cache.PhaseAuth: 80500 * time.Nanosecond},
		Total:  time.Millisecond, TLSVersion: "TLS 1.3",
		Err: &cache.Error{Phase: cache.PhaseAuth, Kind: cache.ErrWrongPass, Err: errors.New("not in JSON")},
	}
	b, err := json.Marshal(pr)
	require.NoError(t, err)
	assert.JSONEq(t, `{"start":"2026-12-01T10:00:00Z","addr":"127.0.0.1:6379",
		"phases_ns":{"connect":120000,"auth":80500},"total_ns":1000000,"tls_version":"TLS 1.3",
		"error_kind":"auth_wrongpass","error_phase":"auth"}`, string(b))

	rr := cache.RunResult{Engine: "resp", Mode: cache.ConnectPerOp, Elapsed: 2 * time.Second, Attempts: 10, Succeeded: 9, Errors: 1,
		FirstError:   "cache: command: timeout (127.0.0.1:6379): i/o timeout",
		ErrorsByKind: map[cache.ErrorKind]int64{cache.ErrTimeout: 1}, Window: time.Second, SucceededInWindow: 9,
		OpsPerSec: 9, Latency: latency.Summary{Observations: 10, P50: 12500 * time.Nanosecond, P99: 40 * time.Microsecond}}
	b, err = json.Marshal(rr)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "connect", got["mode"])
	assert.InDelta(t, 2e9, got["elapsed_ns"], 0)
	assert.InDelta(t, 1e9, got["window_ns"], 0)
	assert.InDelta(t, 9, got["succeeded_in_window"], 0)
	assert.InDelta(t, 9, got["ops_per_sec"], 0)
	assert.Equal(t, map[string]any{"timeout": 1.0}, got["errors_by_kind"])
	assert.InDelta(t, 10, got["attempts"], 0)
	assert.InDelta(t, 9, got["succeeded"], 0)
	assert.InDelta(t, 1, got["errors"], 0)
	assert.Equal(t, rr.FirstError, got["first_error"])
	lat, ok := got["latency"].(map[string]any)
	require.True(t, ok)
	assert.InDelta(t, 12.5, lat["p50_us"], 0)
	assert.InDelta(t, 40, lat["p99_us"], 0)
	assert.NotContains(t, got, "schedule", "closed loop: no schedule")
	assert.NotContains(t, got, "Interleave")
}
