//go:build linux

package kstamp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/netperfkit/netperfkit/latency"
)

// wireTimes pairs, per client port, each request to port (a packet that
// request says is one) with the next data the server sends back on that
// port, and returns the times between them as the capture saw them, in
// capture order.
func wireTimes(pkts []pathlab.Packet, port uint16, request func([]byte) bool) []time.Duration {
	pending := map[uint16]int64{}
	var out []time.Duration
	for _, p := range pkts {
		switch {
		case p.Dst == port && request(p.Payload):
			pending[p.Src] = p.TS
		case p.Src == port:
			if t0, ok := pending[p.Dst]; ok {
				out = append(out, time.Duration(p.TS-t0))
				delete(pending, p.Dst)
			}
		}
	}
	return out
}

func TestWireTimes(t *testing.T) {
	tcp := func(ts int64, src, dst uint16, payload string) pathlab.Packet {
		return pathlab.Packet{TS: ts, Proto: pathlab.TCP, Src: src, Dst: dst, Payload: []byte(payload)}
	}
	pkts := []pathlab.Packet{
		tcp(1e9, 40000, 6379, "GET a"),
		tcp(1e9+5e3, 40001, 6379, "GET b"),
		tcp(1e9+10e3, 6379, 40000, "$1"),
		tcp(1e9+20e3, 40001, 6379, "no"), // not a request
		tcp(1e9+35e3, 6379, 40001, "$1"),
		tcp(1e9+40e3, 6379, 40002, "$1"), // a reply to nothing captured
	}
	got := wireTimes(pkts, 6379, func(b []byte) bool { return bytes.HasPrefix(b, []byte("GET")) })
	assert.Equal(t, []time.Duration{10 * time.Microsecond, 30 * time.Microsecond}, got)
}

// sockperfTimes returns, by sequence number, the time from each sockperf
// request to port that asked for a reply to its reply, as the capture saw
// them, and the first such sequence number.
func sockperfTimes(pkts []pathlab.Packet, port uint16) (map[uint64]time.Duration, uint64) {
	sent := map[uint64]int64{}
	out := map[uint64]time.Duration{}
	first := uint64(math.MaxUint64)
	for _, p := range pkts {
		h, err := wire.DecodeHeader(p.Payload)
		if err != nil && !errors.Is(err, wire.ErrShortMessage) {
			continue
		}
		switch {
		case p.Dst == port && h.Flags&wire.FlagPong != 0:
			sent[h.Seq] = p.TS
			first = min(first, h.Seq)
		case p.Src == port:
			if t0, ok := sent[h.Seq]; ok {
				out[h.Seq] = time.Duration(p.TS - t0)
			}
		}
	}
	return out, first
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// wireLab is an unshaped path lab named for this issue, with tcpdump on
// the client's end of the veth (Host.Capture: both directions, the wire the
// kernel view claims to measure).
func wireLab(t *testing.T) *pathlab.Lab {
	lab := pathlab.New(t, &pathlab.Config{Prefix: "np31"})
	peertest.Binary(t, "apt-get install tcpdump", "tcpdump")
	if lab == nil || t.Skipped() {
		t.SkipNow()
	}
	return lab
}

// viewsAgree logs the kernel view beside the capture's over the same
// requests and reports whether they meet the bounds: medians
// within 5 us, 99th percentiles within 10 %.
func viewsAgree(t *testing.T, what string, kernel, wire []time.Duration, starved bool) bool {
	t.Helper()
	require.NotEmpty(t, kernel, "%s: no kernel view", what)
	require.NotEmpty(t, wire, "%s: nothing captured", what)
	slices.Sort(kernel)
	slices.Sort(wire)
	k50, k99, w50, w99 := quantile(kernel, .5), quantile(kernel, .99), quantile(wire, .5), quantile(wire, .99)
	p99 := float64(k99)/float64(w99) - 1
	t.Logf("%s: kernel view p50 %.2f p99 %.2f us (%d), capture p50 %.2f p99 %.2f us (%d): p50 %+.2f us, p99 %+.1f %% (starved machine: %v)",
		what, us(k50), us(k99), len(kernel), us(w50), us(w99), len(wire), us(k50-w50), 100*p99, starved)
	return (k50-w50).Abs() <= 5*time.Microsecond && math.Abs(p99) <= 0.10
}

// judgeTries runs try up to three times, until one meets the bounds. A
// try on a machine starved of CPU is not judged: a 99th percentile is then
// a few messages that waited for a CPU inside the capture's tap or around
// it. The test fails when every judged try missed the bounds.
func judgeTries(t *testing.T, what string, try func(t *testing.T) (agree, starved bool)) {
	t.Helper()
	judged := 0
	for i := range 3 {
		agree, starved := try(t)
		if t.Failed() || agree {
			return
		}
		if !starved {
			judged++
		}
		t.Logf("%s: try %d missed the bounds", what, i+1)
	}
	if judged == 0 {
		t.Logf("%s: every try ran on a starved machine: the bounds are not judged", what)
		return
	}
	t.Errorf("%s: the kernel view missed the capture's bounds (p50 within 5 us, p99 within 10 %%) in all %d tries on an unstarved machine", what, judged)
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// Ping-pong's kernel view against a capture on the client's veth, over
// UDP and TCP: the same round trips, per message and in distribution.
func TestKernelViewAgainstWirePingPong(t *testing.T) {
	lab := wireLab(t)
	srv, err := latency.NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var ln net.Listener
	var pc net.PacketConn
	require.NoError(t, lab.B.Do(func() (err error) {
		if ln, err = net.Listen("tcp", lab.B.Addr.String()+":0"); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp", ln.Addr().String())
		return err
	}))
	go func() { _ = srv.Serve(ctx, ln) }()
	go func() { _ = srv.ServePacket(ctx, pc) }()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			judgeTries(t, "ping-pong "+network, func(t *testing.T) (bool, bool) {
				return pingPongTry(t, lab, ln.Addr().String(), port, network)
			})
		})
	}
}

// pingPongTry is one captured ping-pong run over network: whether its
// kernel view met the bounds, and whether the machine was starved.
func pingPongTry(t *testing.T, lab *pathlab.Lab, addr string, port uint16, network string) (agree, starved bool) {
	var res *latency.PingPongResult
	cpu := pathlab.StartCPUPressure()
	pkts := lab.A.Capture(t, "udp or tcp", func() {
		require.NoError(t, lab.A.Do(func() (err error) {
			res, err = latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
				Network: network, Count: 3000, MessageSize: 64, ReadTimeout: 5 * time.Second, KernelStamps: true,
			})
			return err
		}))
	})
	starved = cpu.MachineStarved(t)
	require.NotNil(t, res.KernelRTT, "no kernel view: %s", res.NoKernelStamps)
	bySeq, first := sockperfTimes(pkts, port)
	// Per message: a counted run measures every message, in sequence from
	// the first that asked for a reply.
	var kernel, wireRTT, diffs []time.Duration
	for i, k := range res.KernelSamples {
		w, ok := bySeq[first+uint64(i)]
		if k < 0 || !ok {
			continue
		}
		kernel, wireRTT = append(kernel, k), append(wireRTT, w)
		diffs = append(diffs, k-w)
	}
	require.NotEmpty(t, diffs, "no message both measured and captured")
	slices.Sort(diffs)
	t.Logf("%s: %d of %d messages captured; per message kernel - capture: p1 %.2f p50 %.2f p99 %.2f us",
		network, len(diffs), len(res.KernelSamples), us(quantile(diffs, .01)), us(quantile(diffs, .5)), us(quantile(diffs, .99)))
	// Each message's two times agree to within a microsecond at the median
	// (the transmit tap runs just before the device); the bound leaves room.
	assert.LessOrEqual(t, quantile(diffs, .5).Abs(), 5*time.Microsecond, "%s: per message, the kernel view more than 5us from the capture's at p50", network)
	t.Logf("%s application view p50 %.2f p99 %.2f us, %d stamps lost", network, us(res.P50), us(res.P99), res.KernelStampsLost)
	return viewsAgree(t, "ping-pong "+network, kernel, wireRTT, starved), starved
}

// childEnv tells the test binary, run again inside A's namespace, to run
// the cache workload against the address it holds.
const childEnv = "NETPERFKIT_NP31_CACHE_ADDR"

// The cache client runs in A's namespace as a child process of this test
// binary: cache.Run dials from its workers' goroutines, which a Do on one
// thread would not hold in the namespace.
func TestKernelViewWireChild(t *testing.T) {
	addr := os.Getenv(childEnv)
	if addr == "" {
		t.Skip("the child of TestKernelViewAgainstWireCache")
	}
	// 1,999 requests: fewer than twice the kernel view's sample floor, so
	// every request is stamped and the two views time the same requests. A
	// longer run stamps one request in n, so its p99 rests on other requests
	// than the capture's: CI read it 18-26 % off, on a tail 1-2.7 ms long.
	res, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr}, &cache.WorkloadConfig{
		Rate: 1000, Workers: 1, Duration: 5 * time.Second, MaxOps: 1999, GetWeight: 1, SetWeight: 0, KeySpace: 100,
	})
	require.NoError(t, err)
	require.NotNil(t, res.Kernel, "no kernel view: %s", res.NoKernelStamps)
	// Every request stamped or its stamp counted lost: a change to the
	// sample floor that samples this run fails here, not in a p99 that
	// silently compares a sample with the whole capture.
	require.Equal(t, res.Succeeded, res.Kernel.Response.Observations+res.Kernel.StampsLost,
		"the kernel view sampled the run: it must time every request the capture times")
	// Every bucket of the kernel view's histogram, to compare with the
	// capture's times at any quantile.
	var vals []int64
	for _, b := range res.Kernel.Histogram.Distribution() {
		for range b.Count {
			vals = append(vals, (b.From+b.To)/2)
		}
	}
	out, err := json.Marshal(struct {
		Kernel []int64
		App    latency.Summary
		Lost   int64
	}{vals, res.Latency, res.Kernel.StampsLost})
	require.NoError(t, err)
	fmt.Printf("NP31RESULT %s\n", out)
}

// Cache GETs against redis-server across the veth: the resp engine's
// kernel view against the capture's request-to-reply times.
func TestKernelViewAgainstWireCache(t *testing.T) {
	lab := wireLab(t)
	redis := peertest.Binary(t, "apt-get install redis-server", "redis-server")
	if t.Skipped() {
		return
	}
	const port uint16 = 16379
	lab.B.Redis(t, redis, int(port))
	addr := net.JoinHostPort(lab.B.Addr.String(), strconv.Itoa(int(port)))
	judgeTries(t, "cache GET", func(t *testing.T) (bool, bool) { return cacheTry(t, lab, addr, port) })
}

// cacheTry is one captured cache run of the child: whether its kernel
// view met the bounds, and whether the machine was starved.
func cacheTry(t *testing.T, lab *pathlab.Lab, addr string, port uint16) (agree, starved bool) {
	var out []byte
	cpu := pathlab.StartCPUPressure()
	pkts := lab.A.Capture(t, "udp or tcp", func() {
		cmd := lab.A.Command(context.Background(), os.Args[0], "-test.run=^TestKernelViewWireChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+addr)
		var err error
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	})
	starved = cpu.MachineStarved(t)
	i := bytes.Index(out, []byte("NP31RESULT "))
	require.GreaterOrEqual(t, i, 0, "%s", out)
	var r struct {
		Kernel []int64
		App    latency.Summary
		Lost   int64
	}
	line, _, _ := bytes.Cut(out[i+len("NP31RESULT "):], []byte("\n"))
	require.NoError(t, json.Unmarshal(line, &r))
	kernel := make([]time.Duration, len(r.Kernel))
	for i, v := range r.Kernel {
		kernel[i] = time.Duration(v)
	}
	wireRT := wireTimes(pkts, port, func(b []byte) bool { return bytes.HasPrefix(b, []byte("*2\r\n$3\r\nGET\r\n")) })
	t.Logf("cache GET application view p50 %.2f p99 %.2f us, %d stamps lost", us(r.App.P50), us(r.App.P99), r.Lost)
	return viewsAgree(t, "cache GET", kernel, wireRT, starved), starved
}
