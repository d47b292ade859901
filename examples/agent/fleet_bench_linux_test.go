//go:build linux

package main

import (
	"context"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRTTProbeCost runs the agent's RTT probe (5 messages, the
// default -rtt-count) against its own sockperf-compatible server on
// loopback, in one process, with the starvation samples taken around each
// probe and the round trips recorded in the native and classic histogram,
// and reports the CPU time of both ends per probe (cpu-ns/probe, from
// getrusage): what one probe costs the fleet, prober and probed together.
// ns/op is the wall time of a probe.
func BenchmarkRTTProbeCost(b *testing.B) {
	b.Run("flagging", func(b *testing.B) { benchProbe(b, newStarvation(time.Millisecond)) })
	// Without the starvation samples: what they add.
	b.Run("unflagged", func(b *testing.B) { benchProbe(b, nil) })
}

func benchProbe(b *testing.B, starve *starvation) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, serve, err := listenSockperf(ctx, "udp", "127.0.0.1:0", serverLimits{maxConns: 4}, accessControl{})
	require.NoError(b, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = serve() }()
	defer func() { cancel(); <-done }()
	c := defaults()
	probes, err := agentProbes(c)
	require.NoError(b, err)
	m := newMetrics()
	ms := newMesh(ctx, meshConfig{rttTimeout: time.Second, metrics: m, log: slog.New(slog.DiscardHandler),
		probes: probes, starve: starve})
	p := peer{Host: "127.0.0.1", SockperfPort: addr.(*net.UDPAddr).Port}
	ms.probeRTT(ctx, p) // warm up
	var r0, r1 syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &r0))
	n := 0
	for b.Loop() {
		ms.probeRTT(ctx, p)
		n++
	}
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &r1))
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/probe")
	require.Positive(b, rttCount(m, "127.0.0.1"))
}
