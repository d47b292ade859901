//go:build linux

package main

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/internal/sockperfwire"
)

func TestMain(m *testing.M) { pathlab.Main(m) }

// rePercentile finds a percentile line of sockperf's statistics block,
// which our text repeats: "---> percentile 99.000 =  155.596" (usec).
var rePercentile = regexp.MustCompile(`---> percentile ([\d.]+) =\s*([\d.]+)`)

// percentiles returns the first block's p50 and p99, in microseconds.
func percentiles(out string) (p50, p99 float64, err error) {
	p50, p99 = -1, -1
	for _, m := range rePercentile.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case m[1] == "50.000" && p50 < 0:
			p50 = v
		case m[1] == "99.000" && p99 < 0:
			p99 = v
		}
	}
	if p50 < 0 || p99 < 0 {
		return 0, 0, errors.New("no p50 and p99 in the output")
	}
	return p50, p99, nil
}

// wireRTTs returns, for every sockperf request to port in a capture of
// the client's veth (Host.Capture) that asked for a reply and got one, the
// time from the request passing the capture to its reply passing it, in
// microseconds, sorted.
func wireRTTs(pkts []pathlab.Packet, port uint16) []float64 {
	sent := map[uint64]int64{}
	var rtts []float64
	for _, p := range pkts {
		if p.Proto != pathlab.UDP || len(p.Payload) < sockperfwire.HeaderSize {
			continue
		}
		h, err := sockperfwire.DecodeHeader(p.Payload)
		if err != nil && !errors.Is(err, sockperfwire.ErrShortMessage) {
			continue
		}
		switch {
		case p.Dst == port && h.Flags&sockperfwire.FlagPong != 0:
			sent[h.Seq] = p.TS
		case p.Src == port:
			if t0, ok := sent[h.Seq]; ok {
				rtts = append(rtts, float64(p.TS-t0)/1e3)
				delete(sent, h.Seq)
			}
		}
	}
	slices.Sort(rtts)
	return rtts
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func TestWireRTTs(t *testing.T) {
	// Two requests (seq 1 and 2) and one reply, for seq 2, 30 us later.
	frame := func(ts int64, src, dst uint16, seq uint64, flags uint16) pathlab.Packet {
		b := make([]byte, sockperfwire.HeaderSize)
		sockperfwire.Header{Seq: seq, Flags: flags, Length: sockperfwire.HeaderSize}.Put(b)
		return pathlab.Packet{TS: ts, Proto: pathlab.UDP, Src: src, Dst: dst, Payload: b}
	}
	pong := sockperfwire.FlagClient | sockperfwire.FlagPong
	pkts := []pathlab.Packet{
		frame(1e9, 40000, 11111, 1, pong),
		frame(1e9+10e3, 40000, 11111, 2, pong),
		frame(1e9+40e3, 11111, 40000, 2, 0),
		frame(1e9+50e3, 11111, 40000, 9, 0), // a reply to nothing captured
	}
	assert.Equal(t, []float64{30}, wireRTTs(pkts, 11111))
}

// pingLab is a path (unshaped: RTTs of microseconds) with our pingpong
// server and sockperf's in B and tcpdump on A's veth.
type pingLab struct {
	lab            *pathlab.Lab
	ours, sockperf string
}

// capture runs fn while tcpdump records A's veth (Host.Capture), and
// returns the wire RTTs to port.
func (p *pingLab) capture(t *testing.T, port int, fn func()) []float64 {
	t.Helper()
	rtts := wireRTTs(p.lab.A.Capture(t, "udp", fn), uint16(port))
	require.NotEmpty(t, rtts, "no request and reply captured")
	return rtts
}

// client runs a 1 s UDP ping-pong from A to port on B with our client or
// sockperf's and returns its p50 and p99 round trip, in microseconds.
func (p *pingLab) client(t *testing.T, ours bool, port int) (p50, p99 float64) {
	t.Helper()
	addr := p.lab.B.Addr.String()
	args := []string{"ping-pong", "-i", addr, "-p", strconv.Itoa(port), "-t", "1"}
	bin := p.sockperf
	if ours {
		bin, args = p.ours, []string{"-addr", addr + ":" + strconv.Itoa(port), "-t", "1s"}
	}
	var out []byte
	var err error
	for try := 0; try < 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err = p.lab.A.Command(ctx, bin, args...).CombinedOutput()
		cancel()
		// sockperf's UDP client never resends: one datagram lost or
		// stalled ends its run with this (docs/testing.md).
		if ours || !strings.Contains(string(out), "No messages were received") {
			break
		}
	}
	require.NoError(t, err, "%s", out)
	p50, p99, err = percentiles(string(out))
	require.NoError(t, err, "%s", out)
	if !ours {
		// sockperf reports one-way latency, half the round trip.
		p50, p99 = 2*p50, 2*p99
	}
	return p50, p99
}

// TestPingPongAgainstWire: across the veth, in both directions of serving
// (our server, sockperf's), our client's p50 round trip is never below
// the one a capture on the client's veth sees for the same messages (the
// capture stamps a request after the client sent it and a reply before
// the client reads it), nor is a stock sockperf ping-pong's (its one-way
// figures doubled): the capture is a fair referee for both.
//
// What this test does not assert, because it does not hold on the loaded
// 2-core machines: that ours is at least as close to the wire as
// sockperf's. With load averages of 18-20, ours (the Go poller) read
// 7-10 us above the wire at p50 and sockperf 6-8 us; with -spin ours read
// within a microsecond of sockperf's p50 but its p99 reached a millisecond,
// the spinning thread descheduled. The gaps are logged for the record.
// Nor p99: our client keeps a reply later than its adaptive timeout out of
// the round-trip histogram (counted late), the capture does not.
func TestPingPongAgainstWire(t *testing.T) {
	lab := pathlab.New(t, nil)
	sp := peertest.Binary(t, "apt-get install sockperf", "sockperf")
	peertest.Binary(t, "apt-get install tcpdump", "tcpdump")
	if lab == nil || t.Skipped() {
		return
	}
	p := &pingLab{lab: lab, sockperf: sp,
		ours: pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/pingpong")}
	ctx, cancel := context.WithCancel(context.Background())
	var servers []*exec.Cmd
	t.Cleanup(func() {
		cancel()
		for _, c := range servers {
			_ = c.Wait()
		}
	})
	ports := map[string]int{"ours": 11211, "sockperf": 11212}
	for _, srv := range []*execServer{
		{name: "ours", bin: p.ours, args: []string{"-server", "-addr", lab.B.Addr.String() + ":11211"}},
		{name: "sockperf", bin: sp, args: []string{"server", "-i", lab.B.Addr.String(), "-p", "11212"}},
	} {
		cmd := lab.B.Command(ctx, srv.bin, srv.args...)
		require.NoError(t, cmd.Start())
		servers = append(servers, cmd)
	}
	time.Sleep(300 * time.Millisecond) // UDP servers: nothing to poll for; the clients' first messages would be lost, not refused
	for _, srv := range []string{"ours", "sockperf"} {
		port := ports[srv]
		var o50, o99, s50, s99 float64
		ow := p.capture(t, port, func() { o50, o99 = p.client(t, true, port) })
		sw := p.capture(t, port, func() { s50, s99 = p.client(t, false, port) })
		w50, w99, x50, x99 := quantile(ow, .5), quantile(ow, .99), quantile(sw, .5), quantile(sw, .99)
		t.Logf("%s server: ours p50 %.1f p99 %.1f (wire %.1f %.1f, %d pairs); sockperf p50 %.1f p99 %.1f (wire %.1f %.1f, %d pairs) us; p50 above the wire: ours %.1f, sockperf %.1f",
			srv, o50, o99, w50, w99, len(ow), s50, s99, x50, x99, len(sw), o50-w50, s50-x50)
		assert.GreaterOrEqual(t, o50, w50, "%s server: our p50 below the wire's", srv)
		assert.GreaterOrEqual(t, s50, x50, "%s server: sockperf's p50 below the wire's", srv)
	}
}

type execServer struct {
	name, bin string
	args      []string
}
