package latency

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Against an in-process TCP server, with a load beside the probes (a
// goroutine flooding the same server over its own connection): both kinds
// of probe are answered and RPM follows from their trimmed means.
func TestResponsiveness(t *testing.T) {
	addr, _ := startServer(t, "tcp", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // the load: under-load messages at a fixed high rate
		_, _ = PingPong(ctx, addr, &PingPongConfig{Network: "tcp", MPS: 5000, Duration: time.Minute, WarmUp: -1, CoolDown: -1, DiscardSamples: true})
	})
	res, err := Responsiveness(context.Background(), addr, &ResponsivenessConfig{Duration: time.Second, ProbeRate: 30})
	require.NoError(t, err)
	cancel()
	t.Logf("new connection: %d probes, trimmed mean %.0f us, phases %v; established: %d probes, trimmed mean %.0f us; RPM %.0f",
		res.NewConnection.Probes, res.NewConnection.TrimmedMeanUs, res.NewConnectionPhasesUs, res.Established.Probes, res.Established.TrimmedMeanUs, res.RPM)
	for _, ps := range []ProbeStats{res.NewConnection, res.Established} {
		// 30 are due in 1 s; one that waited for a busy worker past the
		// end never started.
		assert.Positive(t, ps.Probes)
		assert.LessOrEqual(t, ps.Probes, int64(31))
		assert.Zero(t, ps.Errors)
		assert.Positive(t, ps.TrimmedMeanUs)
		assert.LessOrEqual(t, ps.TrimmedMeanUs, ps.Latency.MaxUs)
		assert.InDelta(t, 60e6/ps.TrimmedMeanUs, ps.RPM, 1e-6*ps.RPM)
	}
	conn, req := res.NewConnectionPhasesUs["connect"], res.NewConnectionPhasesUs["request"]
	require.Positive(t, conn)
	require.Positive(t, req)
	assert.InEpsilon(t, 60e6/((conn+req)/4+res.Established.TrimmedMeanUs/2), res.RPM, 1e-3)
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
	res, err := Responsiveness(context.Background(), ln.Addr().String(), &ResponsivenessConfig{Duration: 500 * time.Millisecond, ProbeRate: 10, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Positive(t, res.NewConnection.Errors)
	assert.Positive(t, res.Established.Errors)
	assert.Zero(t, res.RPM)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Responsiveness(ctx, ln.Addr().String(), &ResponsivenessConfig{Duration: time.Minute, Timeout: time.Minute})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = Responsiveness(context.Background(), ln.Addr().String(), &ResponsivenessConfig{Network: "udp"})
	require.ErrorIs(t, err, ErrInvalidConfig)
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
	res, err := Responsiveness(context.Background(), addr, &ResponsivenessConfig{Duration: time.Second, ProbeRate: 20, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	e := res.Established
	t.Logf("established: %d probes, %d errors, min %.0f us, trimmed mean %.0f us, RPM %.0f; RPM %.0f",
		e.Probes, e.Errors, e.Latency.MinUs, e.TrimmedMeanUs, e.RPM, res.RPM)
	assert.Positive(t, e.Errors, "the stalled probe failed")
	assert.Greater(t, e.Probes, e.Errors, "the connection was replaced: later probes succeed")
	for _, ps := range []ProbeStats{res.NewConnection, e} {
		assert.Equal(t, ps.Probes, ps.Latency.Observations, "only successes are summarised")
		require.NotNil(t, ps.Histogram)
		assert.Equal(t, ps.Probes, ps.Histogram.TotalCount())
		assert.GreaterOrEqual(t, ps.Latency.MinUs, float64(delay.Microseconds()), "a probe faster than the server")
		assert.LessOrEqual(t, ps.RPM, RPM(delay))
	}
	assert.LessOrEqual(t, res.RPM, RPM(delay))
}

// With no successful probe there is nothing to measure: no latency, no
// trimmed mean, no RPM, however fast the failures.
func TestProbeStatsOfFailuresOnly(t *testing.T) {
	c, err := (&ScheduleConfig{Rate: 1000, Count: 20, Workers: 1}).normalize()
	require.NoError(t, err)
	clk := &fakeClock{}
	s, err := schedule(context.Background(), &c, clk, func(_ context.Context, r *Request) error {
		clk.advanceTo(int64(r.Start.Sub(fakeBase) + time.Microsecond))
		if r.Seq < 5 {
			return errors.New("refused")
		}
		clk.advanceTo(int64(r.Start.Sub(fakeBase) + 500*time.Microsecond))
		return nil
	})
	require.NoError(t, err)
	ps := ProbeStatsOf(s)
	assert.Equal(t, int64(15), ps.Probes)
	assert.Equal(t, int64(5), ps.Errors)
	// The dispatcher may move the fake clock on before a worker reads it,
	// so a response time is at least the time its request took.
	assert.GreaterOrEqual(t, ps.Latency.MinUs, 499.0, "the 1 us failures are not measured")
	assert.Positive(t, ps.RPM)
	assert.LessOrEqual(t, ps.RPM, RPM(499*time.Microsecond))

	s, err = schedule(context.Background(), &c, &fakeClock{}, func(context.Context, *Request) error {
		return errors.New("refused")
	})
	require.NoError(t, err)
	ps = ProbeStatsOf(s)
	assert.Zero(t, ps.Probes)
	assert.Equal(t, int64(20), ps.Errors)
	assert.Zero(t, ps.TrimmedMeanUs)
	assert.Zero(t, ps.RPM)
	assert.True(t, ps.Histogram == nil, "no histogram")
}
