//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// The shaper of the RTT-under-load path, on both ends: tbf 150 Mbit/s with
// 15 ms of queue, whose bucket (64 KiB) adds at most 3.5 ms more. A TCP
// flow keeps such a queue between about 0.7 and 1 of full (cubic backs off
// by 30 % at a drop, and the veth's own round trip is microseconds), so
// a message queued behind it waits milliseconds, where the unloaded path
// answers in tens of microseconds.
const (
	loadRate    = 150e6
	loadBurst   = 64 << 10
	loadLatency = 15 * time.Millisecond
)

// maxQueue is the longest a packet can wait in the shaper: tbf's limit is
// rate x latency plus the bucket.
var maxQueue = func() time.Duration {
	bucket := float64(loadBurst*8) / loadRate // seconds at the rate
	return loadLatency + time.Duration(bucket*float64(time.Second))
}()

// underloadCase is one direction of the flow against the probe, which
// always goes from A to B's echo server and back.
type underloadCase struct {
	name string
	// reverse runs the flow B->A (iperf3 -R): the replies queue in B's
	// shaper, ahead of the capture on A's veth, which then sees the
	// queueing delay itself. Forward (A->B), the requests queue in A's
	// shaper, which a capture on A's veth follows (it taps a packet as the
	// qdisc hands it to the device): the wire shows the path without the
	// queue, and ours the queue on top of it.
	reverse bool
}

// loadedRun is one flow with the probe beside it, and its capture.
type loadedRun struct {
	ours, wire time.Duration // p50s
	samples    int64
	pairs      int
	received   float64 // the flow's bit/s
	drops      int64   // by the shaper the flow went through
	starved    bool
}

// TestRTTUnderLoadAgainstWire: with the path saturated by a TCP flow (our
// iperf3 client with --rtt in A, so underload.Run's probe goes to our
// pingpong server in B beside the flow), the RTT under load is refereed
// by a capture of the probe's requests and replies on A's veth:
//
//   - our p50 is never below the wire's (the capture stamps a request
//     after the probe sent it and a reply before the probe read it);
//   - forward, the queue sits before the capture: ours exceeds the wire
//     by at least half the shaper's latency and at most its whole queue
//     (maxQueue) plus a fifth of its latency for the hosts' stacks;
//   - reverse, the capture sees the queue: ours is within a fifth of the
//     shaper's latency of the wire, and the wire's p50 is at least half
//     the latency and at most maxQueue (and the stacks' fifth) above the
//     unloaded wire's;
//   - in both, the shaper dropped (the flow filled its queue) and ours
//     under load is at least half the shaper's latency above our unloaded
//     p50: the shaper's queue.
//
// The probe measures from each message's intended send time (open loop),
// so a probe goroutine the scheduler runs late adds to ours and not to the
// wire's: hence the stacks' allowance, which a loaded 2-core machine used
// up to 1.5 ms of. The bounds are the capture's and the shaper's
// configuration, never a time of their own. A starved machine
// (pathlab.Starved) can hold a sender below the rate, so the queue short of
// full, and a probe late: a try it starved is judged only on "never below
// the wire".
func TestRTTUnderLoadAgainstWire(t *testing.T) {
	sh := func() *pathlab.Shaper {
		return &pathlab.Shaper{Qdisc: pathlab.TBF, Rate: loadRate, Burst: loadBurst, Latency: loadLatency}
	}
	lab := pathlab.New(t, &pathlab.Config{A: sh(), B: sh()})
	peertest.Binary(t, "apt-get install tcpdump", "tcpdump")
	if lab == nil || t.Skipped() {
		return
	}
	p := &pingLab{lab: lab, ours: pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/pingpong")}
	iperf3 := pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/iperf3")
	const echoPort, iperfPort = 11311, 5411
	ctx, cancel := context.WithCancel(context.Background())
	echo := lab.B.Command(ctx, p.ours, "-server", "-addr", lab.B.Addr.String()+":"+strconv.Itoa(echoPort))
	srv := lab.B.Command(ctx, iperf3, "-s", "-p", strconv.Itoa(iperfPort))
	require.NoError(t, echo.Start())
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		cancel()
		_ = echo.Wait()
		_ = srv.Wait()
	})
	lab.B.WaitListening(t, iperfPort, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // the UDP echo server: nothing to poll for

	var u50 float64
	uw := p.capture(t, echoPort, func() { u50, _ = p.client(t, true, echoPort) })
	unloaded, unloadedWire := usDur(u50), usDur(quantile(uw, .5))
	t.Logf("unloaded: ours p50 %v, wire %v (%d pairs)", unloaded, unloadedWire, len(uw))

	for _, c := range []underloadCase{{name: "flow A->B"}, {name: "flow B->A (-R)", reverse: true}} {
		t.Run(c.name, func(t *testing.T) {
			var r loadedRun
			var bad []string
			for try := 1; try <= 3; try++ {
				r = p.loaded(t, iperf3, iperfPort, echoPort, c.reverse)
				bad = c.check(r, unloaded, unloadedWire)
				t.Logf("try %d: ours p50 %v, wire %v (%d samples, %d pairs), flow %.0f bit/s, %d shaper drops, starved %v: %v",
					try, r.ours, r.wire, r.samples, r.pairs, r.received, r.drops, r.starved, bad)
				if len(bad) == 0 {
					break
				}
			}
			assert.GreaterOrEqual(t, r.ours, r.wire, "our p50 under load below the wire's")
			if !r.starved {
				assert.Empty(t, bad)
			}
		})
	}
}

// loaded runs a 3 s TCP flow of 4 streams (reverse: B->A) with --rtt's
// probe beside it, capturing A's veth. One stream's sender held the
// shaper's queue at about 5 ms of its 15 (its own socket limits, no drops);
// four fill it to tbf's limit, and the shaper drops.
func (p *pingLab) loaded(t *testing.T, iperf3 string, iperfPort, echoPort int, reverse bool) loadedRun {
	t.Helper()
	b := p.lab.B.Addr.String()
	args := []string{"-c", b, "-p", strconv.Itoa(iperfPort), "-t", "3", "-P", "4", "-J", "--rtt", b + ":" + strconv.Itoa(echoPort)}
	queue := p.lab.A // the sender's shaper
	if reverse {
		args, queue = append(args, "-R"), p.lab.B
	}
	drops := queue.Qdisc(t).Drops
	var out []byte
	var err error
	pr := pathlab.StartCPUPressure()
	wire := p.capture(t, echoPort, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err = p.lab.A.Command(ctx, iperf3, args...).Output()
	})
	require.NoError(t, err, "%s", out)
	var doc struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Latency *struct {
			P50Us        float64 `json:"p50_us"`
			Observations int64   `json:"observations"`
			Sent         int64   `json:"sent"`
			Dropped      int64   `json:"dropped"`
			LateReplies  int64   `json:"late_replies"`
		} `json:"latency"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
	require.NotNil(t, doc.Latency, "no RTT under load in %s", out)
	require.Positive(t, doc.Latency.Observations, "%s", out)
	share, ok := pr.Share()
	t.Logf("probe: %d sent, %d round trips, %d dropped, %d late replies; the capture: %d pairs",
		doc.Latency.Sent, doc.Latency.Observations, doc.Latency.Dropped, doc.Latency.LateReplies, len(wire))
	return loadedRun{drops: queue.Qdisc(t).Drops - drops,
		ours: usDur(doc.Latency.P50Us), wire: usDur(quantile(wire, .5)), samples: doc.Latency.Observations,
		pairs: len(wire), received: doc.End.SumReceived.BitsPerSecond, starved: ok && share >= pathlab.Starved,
	}
}

// check returns the bounds r breaks (see TestRTTUnderLoadAgainstWire).
func (c underloadCase) check(r loadedRun, unloaded, unloadedWire time.Duration) []string {
	var bad []string
	stacks, queued := loadLatency/5, loadLatency/2
	gap := r.ours - r.wire
	if gap < 0 {
		bad = append(bad, fmt.Sprintf("ours %v below the wire's %v", r.ours, r.wire))
	}
	if c.reverse {
		if gap > stacks {
			bad = append(bad, fmt.Sprintf("ours %v above the wire's %v by more than %v", r.ours, r.wire, stacks))
		}
		if q := r.wire - unloadedWire; q < queued || q > maxQueue+stacks {
			bad = append(bad, fmt.Sprintf("the wire's queueing delay %v outside %v-%v", q, queued, maxQueue+stacks))
		}
	} else if gap < queued || gap > maxQueue+stacks {
		bad = append(bad, fmt.Sprintf("ours %v above the wire's %v by %v, outside %v-%v (the shaper's queue)", r.ours, r.wire, gap, queued, maxQueue+stacks))
	}
	if r.drops == 0 {
		bad = append(bad, "the shaper dropped nothing: the flow did not fill its queue")
	}
	if r.ours-unloaded < queued {
		bad = append(bad, fmt.Sprintf("ours %v under load, %v unloaded: less than %v of queue", r.ours, unloaded, queued))
	}
	return bad
}

// usDur converts float microseconds (the capture's and the JSON's unit).
func usDur(us float64) time.Duration { return time.Duration(us * 1e3) }
