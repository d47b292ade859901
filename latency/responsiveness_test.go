package latency

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

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
