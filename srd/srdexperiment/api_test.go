package srdexperiment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPIRunResultNeverNil checks docs/conventions.md's rule for Run on each
// of its error paths: the Result is never nil and can be read and printed,
// and a run in which nothing was measured is an error.
func TestAPIRunResultNeverNil(t *testing.T) {
	refused := errors.New("connection refused")
	fake := func() *srdexperiment.Config {
		return &srdexperiment.Config{
			SingleFlowDuration: time.Millisecond, MultiStreamDuration: time.Millisecond, RTTDuration: time.Millisecond, Streams: 2,
			Throughput: func(context.Context, string, int, time.Duration) (float64, error) { return 0, refused },
			RTT: func(context.Context, string, time.Duration) (latency.Summary, error) {
				return latency.Summary{}, refused
			},
		}
	}
	targets := []srdexperiment.Target{{Name: "a", ThroughputAddr: "127.0.0.1:1", PingPongAddr: "127.0.0.1:1"}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		targets []srdexperiment.Target
		cfg     *srdexperiment.Config
		want    string
		rows    int
	}{
		{"nil ctx", nil, targets, nil, "srdexperiment: nil context.Context ctx", 0},
		{"no targets", context.Background(), nil, nil, "srdexperiment: no targets", 0},
		{"negative Streams", context.Background(), targets, &srdexperiment.Config{Streams: -1}, "Config.Streams", 0},
		{"negative RTTDuration", context.Background(), targets, &srdexperiment.Config{RTTDuration: -time.Second}, "Config.RTTDuration", 0},
		{"cancelled ctx", cancelled, targets, fake(), "srdexperiment: context canceled", 0},
		{"every run refused", context.Background(), append(targets, srdexperiment.Target{Name: "b"}), fake(),
			"srdexperiment: every run of all 2 targets failed; the first: a: 1-flow TCP: connection refused", 2},
		{"snapshot fails", context.Background(), targets, func() *srdexperiment.Config {
			c := fake()
			c.Interface = "eth0"
			c.Snapshot = func(string) (*ethtool.Snapshot, error) { return nil, ethtool.ErrNoInterface }
			return c
		}(), "srdexperiment: snapshot", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			enaapicheck.Call(t, c.name, func() {
				res, err := srdexperiment.Run(c.ctx, c.targets, c.cfg)
				require.Error(t, err)
				assert.ErrorContains(t, err, c.want)
				require.NotNil(t, res, "the Result is never nil")
				assert.Len(t, res.Targets, c.rows)
				for _, row := range res.Targets {
					assert.Zero(t, row.SingleFlowBitsPerSecond, "nothing was measured")
				}
				assert.NoError(t, res.WriteTable(&discard{}))
				assert.NoError(t, res.WriteWindows(&discard{}))
			})
		})
	}
	res, err := srdexperiment.Run(cancelled, targets, fake())
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, res.Targets)
}

// TestAPIRunOneRunMeasuredIsNoError: one run that measured is a result; the
// failed ones stay in their rows.
func TestAPIRunOneRunMeasuredIsNoError(t *testing.T) {
	cfg := &srdexperiment.Config{
		SingleFlowDuration: time.Millisecond, MultiStreamDuration: time.Millisecond, RTTDuration: time.Millisecond, Streams: 2,
		Throughput: func(context.Context, string, int, time.Duration) (float64, error) {
			return 0, errors.New("connection refused")
		},
		RTT: func(context.Context, string, time.Duration) (latency.Summary, error) {
			return latency.Summary{P50: 10 * time.Microsecond}, nil
		},
	}
	res, err := srdexperiment.Run(context.Background(), []srdexperiment.Target{{Name: "a"}}, cfg)
	require.NoError(t, err)
	require.Len(t, res.Targets, 1)
	assert.Equal(t, "1-flow TCP: connection refused", res.Targets[0].Error)
	assert.Equal(t, 10*time.Microsecond, res.Targets[0].RTT.P50)
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
