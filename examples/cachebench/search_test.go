package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/latency/slo"
)

// stall keeps the server busy with back-to-back DEBUG SLEEPs of d on one
// connection until the test ends: every other command waits up to d for
// its turn, so one connection gets about one operation per d.
func stall(t *testing.T, addr string, d time.Duration) {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); c.Close(); wg.Wait() })
	wg.Go(func() {
		br := bufio.NewReader(c)
		for ctx.Err() == nil {
			if _, err := fmt.Fprintf(c, "DEBUG SLEEP %g\r\n", d.Seconds()); err != nil {
				return
			}
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
		}
	})
}

// The SLO search against a real server that one connection can drive at
// only a few hundred operations per second (DEBUG SLEEPs in between): it
// finds a rate that meets the SLO below one that breaks it.
func TestSearchRateThrottledServer(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{ExtraArgs: []string{"--enable-debug-command", "yes"}})
	stall(t, s.Addr, 2*time.Millisecond)
	objective := slo.SLO{Percentile: 99, Max: 50 * time.Millisecond}
	var steps int
	ep := s.Endpoint()
	res, err := searchRate(context.Background(), ep, &cache.WorkloadConfig{Workers: 1, KeySpace: 100},
		&slo.Config{SLO: objective, Start: 50, StepDuration: 400 * time.Millisecond, Precision: 0.25, MaxSteps: 8,
			OnStep: func(slo.Step) { steps++ }})
	require.NoError(t, err)
	assert.Len(t, res.Steps, steps)
	for _, st := range res.Steps {
		t.Logf("%-6s %5.0f/s achieved %5.0f/s p99 %8.0f us, %d requests, met %v", st.Phase, st.Rate, st.AchievedRate, float64(st.Percentile)/1e3, st.Requests, st.Met)
		if st.Met {
			assert.LessOrEqual(t, st.Percentile, 50*time.Millisecond)
		}
	}
	require.Positive(t, res.BrokeAt, "one connection to the stalled server cannot hold 50 x 2^7 operations per second")
	if res.Rate > 0 {
		assert.Less(t, res.Rate, res.BrokeAt)
	}

	_, err = searchRate(context.Background(), ep, nil, &slo.Config{})
	require.ErrorIs(t, err, slo.ErrInvalidConfig)
}
