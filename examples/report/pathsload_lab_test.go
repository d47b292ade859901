//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
)

// loadLab is a path-lab path with netperfkit's throughput and ping-pong
// servers on B (this process) and the built report run on A.
type loadLab struct {
	lab          *pathlab.Lab
	report       string
	tport, lport int
}

func newLoadLab(t *testing.T, cfg *pathlab.Config) *loadLab {
	t.Helper()
	cfg.Prefix = "np35"
	lab := pathlab.New(t, cfg)
	if lab == nil || t.Skipped() {
		return nil
	}
	var ln net.Listener
	var pc net.PacketConn
	require.NoError(t, lab.B.Do(func() (err error) {
		if ln, err = net.Listen("tcp", netip.AddrPortFrom(lab.B.Addr, 0).String()); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp", netip.AddrPortFrom(lab.B.Addr, 0).String())
		return err
	}))
	tsrv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	lsrv, err := latency.NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = tsrv.Serve(ctx, ln); done <- struct{}{} }()
	go func() { _ = lsrv.ServePacket(ctx, pc); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &loadLab{lab: lab, report: pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/report"),
		tport: ln.Addr().(*net.TCPAddr).Port, lport: pc.LocalAddr().(*net.UDPAddr).Port}
}

// e1 runs the report's E1 from A against B and returns its section.
func (l *loadLab) e1(t *testing.T, rttLoad, rttD string) *PathsSection {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := l.lab.A.Command(ctx, l.report, "-skip", "matrix,cache", "-imds", "off", "-progress", "off", "-json",
		"-paths", "lab="+l.lab.B.Addr.String(), "-tport", strconv.Itoa(l.tport), "-lport", strconv.Itoa(l.lport),
		"-rtt-mode", "poll", "-d", "300ms", "-rtt-d", rttD, "-streams", "8", "-rtt-load", rttLoad)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var rep Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "%s", stdout.String())
	require.NotNil(t, rep.Paths)
	require.Len(t, rep.Paths.Targets, 1)
	require.Empty(t, rep.Paths.Targets[0].Error)
	return rep.Paths
}

// Shaped path of TestLoadedRTTDeepQueue: 300 Mbit/s with a 256 KiB
// bucket and 50 ms of latency, the hand-checked path.
const (
	deepRate    = 300e6
	deepBurst   = 256 << 10
	deepLatency = 50 * time.Millisecond
	// deepMargin is what the assertion leaves of the computed bound: a
	// flow that times out (RTO) lets the queue drain for a while, slow
	// start refills it, and the probe's p50 is over the whole run, not
	// over a steady state.
	deepMargin = 0.4
)

// TestLoadedRTTDeepQueue runs E1 across a path whose middle hop forwards
// into a tbf with a deep queue: limit = rate x latency + bucket (tc's
// formula), 57 ms at 300 Mbit/s. The queue is on a router (pathlab's
// Router), not on the sending host, where TCP Small Queues would hold
// each connection to two packets in the qdisc whatever the limit; the
// client's TCP is loss-based (reno), so the flows fill the queue to its
// limit and each halves its window at a loss: the queue stays above half
// the limit. The probe's datagrams wait behind it, so the loaded p50
// exceeds the idle p50 by at least half the full queue's delay, less
// deepMargin. A starved machine's sender may not keep the queue filled:
// then the shortfall is logged (docs/testing.md).
func TestLoadedRTTDeepQueue(t *testing.T) {
	l := newLoadLab(t, &pathlab.Config{Router: true})
	if l == nil {
		return
	}
	l.lab.M.Run(t, "tc", "qdisc", "add", "dev", "veth1", "root", "tbf", "rate", strconv.FormatFloat(deepRate, 'f', 0, 64)+"bit",
		"burst", strconv.Itoa(deepBurst)+"b", "latency", strconv.FormatInt(deepLatency.Microseconds(), 10)+"us")
	require.NoError(t, l.lab.A.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/tcp_congestion_control", []byte("reno"), 0o644)
	}))
	limitBytes := deepRate/8*deepLatency.Seconds() + deepBurst
	full := time.Duration(limitBytes * 8 / deepRate * float64(time.Second)) // 57.0 ms
	bound := time.Duration(float64(full) / 2 * (1 - deepMargin))            // 17.1 ms
	var delta time.Duration
	var starved bool
	for try := 1; try <= 3; try++ {
		pr := pathlab.StartCPUPressure()
		drops := routerDrops(t, l.lab)
		sec := l.e1(t, "on", "2s")
		drops = routerDrops(t, l.lab) - drops
		require.Len(t, sec.Loaded, 1)
		ld, idle := sec.Loaded[0], sec.Targets[0].RTT
		require.Empty(t, ld.Error)
		require.Positive(t, ld.RTT.Observations)
		phases := []string{}
		for _, w := range sec.Targets[0].Windows {
			phases = append(phases, w.Phase)
		}
		assert.Equal(t, []string{"1-flow", "n-stream", "rtt", "rtt-load"}, phases)
		delta = ld.RTT.P50 - idle.P50
		t.Logf("try %d: idle p50 %v, loaded p50 %v (+%v; bound %v = half of the full queue's %v, less %.0f%%), p99 %v; flow %.0f Mbit/s; tbf drops +%d; %s %s",
			try, idle.P50, ld.RTT.P50, delta, bound, full, 100*deepMargin, ld.RTT.P99, ld.FlowBitsPerSecond/1e6, drops, ld.AttributedTo, ld.GeneratorNote)
		assert.InEpsilon(t, float64(ld.RTT.P50)/float64(idle.P50), ld.RatioP50, 1e-9)
		if delta >= bound {
			return
		}
		starved = pr.MachineStarved(t)
	}
	if starved {
		t.Logf("loaded p50 only %v above the idle one, under the %v bound: the machine starved the sender", delta, bound)
		return
	}
	t.Errorf("loaded p50 only %v above the idle one: the queue the shaper adds is at least %v", delta, bound)
}

// routerDrops is the drop count of the router's tbf (tc -s -j).
func routerDrops(t *testing.T, lab *pathlab.Lab) int64 {
	t.Helper()
	var qs []struct {
		Root  bool  `json:"root"`
		Drops int64 `json:"drops"`
	}
	require.NoError(t, json.Unmarshal([]byte(lab.M.Run(t, "tc", "-s", "-j", "qdisc", "show", "dev", "veth1")), &qs))
	for _, q := range qs {
		if q.Root {
			return q.Drops
		}
	}
	t.Fatal("no root qdisc on the router's veth1")
	return 0
}

// TestLoadedRTTUnshaped runs E1 across an unshaped veth: the path has no
// queue the probe waits in, so the loaded p50 agrees with the idle one
// within the idle p50's run-to-run spread (measured here, from repeated
// runs), unless the row says the generator shaped it (on a veth the flow
// is bounded by the host's CPUs, which the probe shares); then the verdict
// must match the numbers it was judged from.
func TestLoadedRTTUnshaped(t *testing.T) {
	l := newLoadLab(t, &pathlab.Config{})
	if l == nil {
		return
	}
	var idle []time.Duration
	for range 3 {
		sec := l.e1(t, "off", "1s")
		assert.Empty(t, sec.Loaded)
		idle = append(idle, sec.Targets[0].RTT.P50)
	}
	sec := l.e1(t, "on", "1s")
	require.Len(t, sec.Loaded, 1)
	ld := sec.Loaded[0]
	require.Empty(t, ld.Error)
	idle = append(idle, sec.Targets[0].RTT.P50)
	slices.Sort(idle)
	spread := idle[len(idle)-1] - idle[0]
	median := (idle[1] + idle[2]) / 2
	t.Logf("idle p50s %v (spread %v), loaded p50 %v; host CPU %.0f%%, sender CPU %.0f%%, probe share p99 %.1f us: %s %s",
		idle, spread, ld.RTT.P50, ld.HostCPUPercent, ld.SenderCPUPercent, ld.ClientShareP99Us, ld.AttributedTo, ld.GeneratorNote)
	share := time.Duration(math.Round(ld.ClientShareP99Us * 1e3))
	by, note := judgeLoaded(&ld, share, runtime.NumCPU(), false)
	assert.Equal(t, ld.AttributedTo, by, "the verdict is the one its numbers give")
	assert.Equal(t, ld.GeneratorNote, note)
	if ld.AttributedTo == "generator" {
		return
	}
	require.Equal(t, "path", ld.AttributedTo)
	diff := ld.RTT.P50 - median
	assert.LessOrEqual(t, max(diff, -diff), spread, "an unshaped path's loaded p50 within the idle runs' spread")
}
