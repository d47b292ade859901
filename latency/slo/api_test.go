package slo

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
)

// Search's and PingPong's results are never nil, whatever the error, and
// can be read (docs/conventions.md, "Results after an error: never nil").
func TestResultNeverNil(t *testing.T) {
	var nilCtx context.Context // a nil context is the point
	good := SLO{Percentile: 99, Max: time.Millisecond}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	silent := pc.LocalAddr().String()
	for name, call := range map[string]func() (*Result, error){
		"nil config":  func() (*Result, error) { return Search(context.Background(), nil) },
		"nil context": func() (*Result, error) { return Search(nilCtx, &Config{SLO: good, Measure: model(1e9)}) },
		"negative": func() (*Result, error) {
			return Search(context.Background(), &Config{SLO: good, Measure: model(1e9), Start: -1})
		},
		"cancelled":  func() (*Result, error) { return Search(cancelled, &Config{SLO: good, Measure: model(1e9)}) },
		"nil search": func() (*Result, error) { return PingPong(context.Background(), silent, nil, nil) },
		"bad ping-pong config": func() (*Result, error) {
			return PingPong(context.Background(), silent, &latency.PingPongConfig{ReadTimeout: -time.Second}, &Config{SLO: good})
		},
		"no reply": func() (*Result, error) {
			return PingPong(context.Background(), silent, &latency.PingPongConfig{ReadTimeout: 20 * time.Millisecond},
				&Config{SLO: good, Start: 100, StepDuration: 100 * time.Millisecond, MaxSteps: 1})
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := call()
			require.Error(t, err)
			require.NotNil(t, r)
			_ = r.Rate + r.BrokeAt
			_ = len(r.Steps)
			_, err = json.Marshal(r)
			require.NoError(t, err)
		})
	}
}

// No reply at all to the first step is an error (nothing answers there);
// to a later step, after the server answered, it breaks the SLO.
func TestPingPongNoReply(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	res, err := PingPong(context.Background(), pc.LocalAddr().String(), &latency.PingPongConfig{ReadTimeout: 20 * time.Millisecond},
		&Config{SLO: SLO{Percentile: 50, Max: time.Second}, Start: 100, StepDuration: 100 * time.Millisecond, MaxSteps: 2})
	require.ErrorIs(t, err, latency.ErrNoReply)
	assert.Empty(t, res.Steps)
}

// Configuration errors name the field the caller set, in its own unit.
func TestConfigErrorsNameTheField(t *testing.T) {
	good := SLO{Percentile: 99, Max: time.Millisecond}
	m := model(1e9)
	for want, cfg := range map[string]*Config{
		"StepDuration -1s is negative":    {SLO: good, Measure: m, StepDuration: -time.Second},
		"Start -5 is negative":            {SLO: good, Measure: m, Start: -5},
		"Precision NaN":                   {SLO: good, Measure: m, Precision: math.NaN()},
		"MaxSteps -2 is negative":         {SLO: good, Measure: m, MaxSteps: -2},
		"Start 2e+07 exceeds the maximum": {SLO: good, Measure: m, Start: 2e7},
	} {
		_, err := Search(context.Background(), cfg)
		require.ErrorIs(t, err, latency.ErrInvalidConfig, want)
		assert.Contains(t, err.Error(), want)
	}
}

// Methods of the result types are safe on nil pointers.
func TestNilStep(t *testing.T) {
	var s *Step
	assert.ErrorContains(t, s.UnmarshalJSON([]byte(`{}`)), "nil pointer")
}
