package responsiveness

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/internal/rpm"
	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func usOf(d time.Duration) float64 { return float64(d) / 1e3 }

// Against an in-process TCP server, with a load beside the probes (a
// goroutine flooding the same server over its own connection): both kinds
// of probe are answered and RPM follows from their trimmed means.
func TestResponsiveness(t *testing.T) {
	addr := latencytest.NewServer(t, &latencytest.Config{Network: "tcp"}).Addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // the load: under-load messages at a fixed high rate
		_, _ = latency.PingPong(ctx, addr, &latency.PingPongConfig{Network: "tcp", MPS: 5000, Duration: time.Minute, WarmUp: -1, CoolDown: -1, DiscardSamples: true})
	})
	res, err := Run(context.Background(), addr, &Config{Duration: time.Second, ProbeRate: 30})
	require.NoError(t, err)
	cancel()
	t.Logf("new connection: %d probes, trimmed mean %.0f us, phases %v; established: %d probes, trimmed mean %.0f us; RPM %.0f",
		res.NewConnection.Probes, usOf(res.NewConnection.TrimmedMean), res.NewConnectionPhases, res.Established.Probes, usOf(res.Established.TrimmedMean), res.RPM)
	for _, ps := range []ProbeStats{res.NewConnection, res.Established} {
		// 30 are due in 1 s; one that waited for a busy worker past the
		// end never started.
		assert.Positive(t, ps.Probes)
		assert.LessOrEqual(t, ps.Probes, int64(31))
		assert.Zero(t, ps.Errors)
		assert.Positive(t, ps.TrimmedMean)
		assert.LessOrEqual(t, ps.TrimmedMean, ps.Latency.Max)
		assert.InDelta(t, 60e6/usOf(ps.TrimmedMean), ps.RPM, 1e-6*ps.RPM)
	}
	conn, req := usOf(res.NewConnectionPhases["connect"]), usOf(res.NewConnectionPhases["request"])
	require.Positive(t, conn)
	require.Positive(t, req)
	assert.InEpsilon(t, 60e6/((conn+req)/4+usOf(res.Established.TrimmedMean)/2), res.RPM, 1e-3)
}

// A server that accepts but never answers: every probe fails by its
// timeout, and cancelling returns promptly.
func TestResponsivenessSilentAndCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	res, err := Run(context.Background(), ln.Addr().String(), &Config{Duration: 500 * time.Millisecond, ProbeRate: 10, timeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, latency.ErrNoReply, "no probe answered is no success")
	require.NotNil(t, res)
	assert.Positive(t, res.NewConnection.Errors)
	assert.Positive(t, res.Established.Errors)
	assert.Zero(t, res.RPM)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err = Run(ctx, ln.Addr().String(), &Config{Duration: time.Minute, timeout: time.Minute})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, res)
	assert.Less(t, time.Since(start), 5*time.Second)

	res, err = Run(context.Background(), ln.Addr().String(), &Config{network: "udp"})
	require.ErrorIs(t, err, latency.ErrInvalidConfig)
	require.NotNil(t, res, "a result after any error")
	_ = res.Established.Latency.P99 + res.NewConnection.TrimmedMean
}

// stallingEchoServer answers sockperf messages after a fixed delay; the
// connection accepted first (Responsiveness's established one) stalls
// stallFor before its reply to message stallAt.
func stallingEchoServer(t *testing.T, delay time.Duration, stallAt int, stallFor time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			first := n == 0
			wg.Go(func() {
				defer c.Close()
				b := make([]byte, wire.HeaderSize)
				for i := 0; ; i++ {
					if _, err := io.ReadFull(c, b); err != nil {
						return
					}
					if first && i == stallAt {
						time.Sleep(stallFor)
					}
					time.Sleep(delay)
					h, err := wire.DecodeHeader(b)
					if err != nil {
						return
					}
					h.Flags &^= wire.FlagClient
					h.Put(b)
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// One established probe times out on a stalled reply. The failure is
// counted but not measured, the connection is replaced so that later probes
// succeed again, and no statistic or RPM can be faster than the server's
// 2 ms delay: failures that end at once must not enter them.
func TestResponsivenessFailedProbesNotMeasured(t *testing.T) {
	const delay = 2 * time.Millisecond
	addr := stallingEchoServer(t, delay, 3, 300*time.Millisecond)
	res, err := Run(context.Background(), addr, &Config{Duration: time.Second, ProbeRate: 20, timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	e := res.Established
	t.Logf("established: %d probes, %d errors, min %.0f us, trimmed mean %.0f us, RPM %.0f; RPM %.0f",
		e.Probes, e.Errors, usOf(e.Latency.Min), usOf(e.TrimmedMean), e.RPM, res.RPM)
	assert.Positive(t, e.Errors, "the stalled probe failed")
	assert.Greater(t, e.Probes, e.Errors, "the connection was replaced: later probes succeed")
	for _, ps := range []ProbeStats{res.NewConnection, e} {
		assert.Equal(t, ps.Probes, ps.Latency.Observations, "only successes are summarised")
		require.NotNil(t, ps.Histogram)
		assert.Equal(t, ps.Probes, ps.Histogram.TotalCount())
		assert.GreaterOrEqual(t, usOf(ps.Latency.Min), float64(delay.Microseconds()), "a probe faster than the server")
		assert.LessOrEqual(t, ps.RPM, rpm.RPM(delay))
	}
	assert.LessOrEqual(t, res.RPM, rpm.RPM(delay))
}

// ProbeStatsOf measures the successful probes only: their count, their
// histogram's trimmed mean and RPM, beside the failures; with no
// successful probe there is nothing to measure: no latency, no trimmed
// mean, no RPM.
func TestProbeStatsOf(t *testing.T) {
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for range 15 {
		require.NoError(t, h.RecordValue(int64(500*time.Microsecond)))
	}
	s := &latency.ScheduleResult{Failed: 5, SuccessResponse: latency.SummarizeHistogram(h, 0), SuccessResponseHistogram: h}
	ps := ProbeStatsOf(s)
	assert.Equal(t, int64(15), ps.Probes)
	assert.Equal(t, int64(5), ps.Errors)
	assert.InEpsilon(t, float64(500*time.Microsecond), float64(ps.TrimmedMean), 1e-3)
	assert.InEpsilon(t, 120_000, ps.RPM, 1e-3)

	ps = ProbeStatsOf(&latency.ScheduleResult{Failed: 20})
	assert.Zero(t, ps.Probes)
	assert.Equal(t, int64(20), ps.Errors)
	assert.Zero(t, ps.TrimmedMean)
	assert.Zero(t, ps.RPM)
	assert.True(t, ps.Histogram == nil, "no histogram")
	assert.Equal(t, ProbeStats{}, ProbeStatsOf(nil))
}

// The JSON keeps the shape and units it had in package latency.
func TestResultJSONShape(t *testing.T) {
	r := Result{
		NewConnection:       ProbeStats{Probes: 3, Errors: 1, TrimmedMean: 1500 * time.Nanosecond, RPM: 4e7},
		NewConnectionPhases: map[string]time.Duration{"connect": 250 * time.Nanosecond, "request": 1250 * time.Nanosecond},
		Established:         ProbeStats{Probes: 2, TrimmedMean: 2 * time.Microsecond, RPM: 3e7},
		RPM:                 12345,
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, map[string]any{"connect": 0.25, "request": 1.25}, m["new_connection_phases_trimmed_mean_us"])
	nc := m["new_connection"].(map[string]any)
	assert.Equal(t, 1.5, nc["trimmed_mean_us"])
	assert.ElementsMatch(t, []string{"probes", "errors", "latency", "trimmed_mean_us", "rpm"}, keys(nc))
	assert.ElementsMatch(t, []string{"new_connection", "new_connection_phases_trimmed_mean_us", "established_connection", "rpm"}, keys(m))
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	r.NewConnection.Latency.CILevel, r.Established.Latency.CILevel = back.NewConnection.Latency.CILevel, back.Established.Latency.CILevel
	assert.Equal(t, r, back)
}

func keys(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	return k
}

// FuzzResultJSON: whatever UnmarshalJSON accepts, MarshalJSON writes back
// in a form that reads as the same result.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []string{`{"new_connection":{"probes":3,"trimmed_mean_us":1.5},"new_connection_phases_trimmed_mean_us":{"connect":0.25},"rpm":5}`,
		"{}", `{"established_connection":{"trimmed_mean_us":-1e300}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Result
		if json.Unmarshal(b, &r) != nil {
			return
		}
		out, err := json.Marshal(r)
		require.NoError(t, err)
		var again Result
		require.NoError(t, json.Unmarshal(out, &again))
		assert.Equal(t, r, again)
	})
}
