//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

func TestMain(m *testing.M) { pathlab.Main(m) }

// labRate is the shaped rate of the path the TCP tests run across, both
// ways: tbf 800mbit, burst 256 KiB, latency 20 ms, as in issue 24.
const labRate = 800e6

// udpLabRate is the UDP tests' path: 800 Mbit/s of 1400-byte datagrams is
// 71,000 a second, more than a stock receiver reading one at a time keeps
// up with on a loaded 2-core CI machine (3.21 into 3.21 delivered 250-470
// Mbit/s there), where 18,000 a second leave the shaper in charge.
const udpLabRate = 200e6

// labPeers is an 800 Mbit/s path with our iperf3 and 3.21 on both ends.
type labPeers struct {
	lab        *pathlab.Lab
	ours, i321 string
	port       int
}

func newLabPeers(t *testing.T, rate float64) *labPeers {
	t.Helper()
	sh := func() *pathlab.Shaper { return &pathlab.Shaper{Qdisc: pathlab.TBF, Rate: rate} }
	lab := pathlab.New(t, &pathlab.Config{A: sh(), B: sh()})
	i321 := peertest.NewIPerf3(t)
	if t.Skipped() || lab == nil {
		return nil
	}
	return &labPeers{lab: lab, ours: pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/iperf3"), i321: i321, port: 5300}
}

// serve starts bin's server on B and returns its port.
func (p *labPeers) serve(t *testing.T, bin string) int {
	t.Helper()
	p.port++
	p.lab.B.Start(t, bin, "-s", "-p", strconv.Itoa(p.port))
	p.lab.B.WaitListening(t, p.port, 10*time.Second)
	return p.port
}

// labSum is what a -J document's end says of one direction.
type labSum struct {
	BitsPerSecond float64 `json:"bits_per_second"`
	Packets       int64   `json:"packets"`
	LostPackets   int64   `json:"lost_packets"`
	LocalDrops    int64   `json:"local_drops"`
	LocalRetries  int64   `json:"local_retries"`
}

type labResult struct {
	End struct {
		SumSent     labSum `json:"sum_sent"`
		SumReceived labSum `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
	// rcvbufDrops is what the receiving namespace's kernel dropped for
	// want of socket buffer during the run (UdpRcvbufErrors): the
	// receiver's host, not the path, lost those.
	rcvbufDrops int64
}

// client runs bin's client on A against the server on port, and retries
// (twice at most) when a stock server is still busy with the last test.
func (p *labPeers) client(t *testing.T, bin string, port int, args ...string) labResult {
	t.Helper()
	args = append([]string{"-c", p.lab.B.Addr.String(), "-p", strconv.Itoa(port), "-J"}, args...)
	var r labResult
	for try := 0; ; try++ {
		rcv := p.lab.B
		if slices.Contains(args, "-R") {
			rcv = p.lab.A
		}
		before := rcv.SNMP(t)["UdpRcvbufErrors"]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := p.lab.A.Command(ctx, bin, args...).Output()
		cancel()
		r = labResult{}
		require.NoError(t, json.Unmarshal(out, &r), "%s %v: %v: %s", bin, args, err, out)
		r.rcvbufDrops = rcv.SNMP(t)["UdpRcvbufErrors"] - before
		if r.Error == "" || !strings.Contains(r.Error, "busy") || try == 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Empty(t, r.Error, "%s %v", bin, args)
	return r
}

// shaped reports whether a received rate is 85-105 % of the shaped rate.
func shaped(bps float64) bool { return bps >= 0.85*labRate && bps <= 1.05*labRate }

// labTries is how many times a comparison runs before it fails. Only a
// starved CPU makes a sender fall short of the shaped rate (docs/testing.md:
// the 2-core CI runs other tests at the same time, and a 1 s run loses
// a tenth of its rate to a 100 ms stall); a rate above the shaper's bound,
// or two senders that disagree when neither was starved, fails every try.
const labTries = 3

// starved is pr.MachineStarved, for the tries of this package's lab tests.
func starved(t *testing.T, pr pathlab.CPUPressure) bool {
	t.Helper()
	return pr.MachineStarved(t)
}

// compare runs ours and theirs (each returns a received rate) until both
// are within the shaper's bounds and agree within tol, labTries times at
// most, and then asserts the last try: all of it, or when the machine
// starved it (starved), that neither rate passed the shaper's upper bound.
func compare(t *testing.T, name string, tol float64, ours, theirs func() float64) {
	t.Helper()
	var o, th float64
	var short bool
	for try := 1; try <= labTries; try++ {
		pr := pathlab.StartCPUPressure()
		o, th = ours(), theirs()
		if shaped(o) && shaped(th) && relDiff(o, th) <= tol {
			return
		}
		t.Logf("%s: try %d: ours %.0f, 3.21 %.0f bit/s across %.0f", name, try, o, th, labRate)
		short = starved(t, pr)
	}
	if short {
		assert.LessOrEqual(t, o, 1.05*labRate, "ours, %s", name)
		assert.LessOrEqual(t, th, 1.05*labRate, "3.21, %s", name)
		return
	}
	assertShaped(t, o, "ours, "+name)
	assertShaped(t, th, "3.21, "+name)
	assert.InEpsilon(t, th, o, tol, "%s: ours %.0f, 3.21 %.0f", name, o, th)
}

func relDiff(a, b float64) float64 {
	if b == 0 {
		return 1
	}
	d := (a - b) / b
	if d < 0 {
		d = -d
	}
	return d
}

// assertShaped checks a received rate is 85-105 % of the shaped rate.
func assertShaped(t *testing.T, bps float64, what string) {
	t.Helper()
	assert.GreaterOrEqual(t, bps, 0.85*labRate, "%s: %.0f bit/s across %.0f", what, bps, labRate)
	assert.LessOrEqual(t, bps, 1.05*labRate, "%s: %.0f bit/s across %.0f", what, bps, labRate)
}

// TestLabTCP: 1 and 4 streams, both directions, across the 800 Mbit/s
// path: each run receives 85-105 % of the shaped rate, and our client and
// 3.21's agree within 5 %, into our server and into 3.21's.
func TestLabTCP(t *testing.T) {
	p := newLabPeers(t, labRate)
	if p == nil {
		return
	}
	servers := map[string]int{"ours": p.serve(t, p.ours), "3.21": p.serve(t, p.i321)}
	for _, srv := range []string{"ours", "3.21"} {
		for _, streams := range []string{"1", "4"} {
			for _, dir := range [][]string{nil, {"-R"}} {
				name := srv + " server, " + streams + " streams " + strings.Join(dir, "")
				args := append([]string{"-t", "1", "-P", streams}, dir...)
				rate := func(bin string) func() float64 {
					return func() float64 { return p.client(t, bin, servers[srv], args...).End.SumReceived.BitsPerSecond }
				}
				compare(t, name, 0.05, rate(p.ours), rate(p.i321))
			}
		}
	}
}

// udpCase is one UDP client run across the path and what it must show.
type udpCase struct {
	client string // "3.21", "ours" (waits for its host's queue) or "ours --keep-rate"
	rate   float64
}

// check returns what r shows against the case's expectations, nil when all
// holds: the path delivered 85-105 % of min(rate, the shaped rate) with
// under 1 % lost on it, and the sender counted as sent only what
// left its host -- below the shaped rate, 85-105 % of the shaped rate
// (3.21, ours) or of the target with the host's drops counted apart
// (--keep-rate).
//
// It returns the shortfalls below the lower bounds apart (short): only
// those may be the machine's (starved).
func (c udpCase) check(r labResult) (bad, short []string) {
	want := min(c.rate, udpLabRate)
	sent, recv := r.End.SumSent, r.End.SumReceived
	within := func(what string, v, of float64) {
		switch {
		case v < 0.85*of:
			short = append(short, fmt.Sprintf("%s %.0f bit/s, below 85 %% of %.0f", what, v, of))
		case v > 1.05*of:
			bad = append(bad, fmt.Sprintf("%s %.0f bit/s, above 105 %% of %.0f", what, v, of))
		}
	}
	// A starved receiver (a stock one reads a datagram at a time) loses
	// datagrams in its own socket buffer: its host's kernel counts them,
	// and they were delivered by the path. Losses are accounted for, not
	// capped (docs/testing.md).
	pathLost := recv.LostPackets - r.rcvbufDrops
	within("delivered", recv.BitsPerSecond+float64(min(r.rcvbufDrops, recv.LostPackets))*1400*8, want)
	if float64(pathLost) >= 0.01*float64(max(recv.Packets, 1)) {
		bad = append(bad, fmt.Sprintf("lost on the path %d of %d (%d reported lost, %d in the receiver's buffer)",
			pathLost, recv.Packets, recv.LostPackets, r.rcvbufDrops))
	}
	if c.client != "ours --keep-rate" {
		within("sent", sent.BitsPerSecond, want)
		if sent.LocalDrops != 0 {
			bad = append(bad, fmt.Sprintf("%d local drops without --keep-rate", sent.LocalDrops))
		}
	}
	over := c.rate > udpLabRate
	switch {
	case c.client == "ours" && over && sent.LocalRetries == 0:
		short = append(short, "no local retries above the shaped rate")
	case c.client == "ours --keep-rate" && over:
		// What the host took plus what it dropped is what was offered:
		// more than the path takes (a starved sender offers less than
		// its target; the pacer forgives what it cannot catch up).
		offered := float64(sent.Packets+sent.LocalDrops) * 1400 * 8
		if sent.LocalDrops == 0 || offered < 1.05*udpLabRate {
			short = append(short, fmt.Sprintf("sent %d and dropped %d datagrams at %.0f bit/s", sent.Packets, sent.LocalDrops, c.rate))
		}
	case !over && (sent.LocalDrops != 0 || sent.LocalRetries != 0):
		bad = append(bad, fmt.Sprintf("local drops %d, retries %d below the shaped rate", sent.LocalDrops, sent.LocalRetries))
	}
	return bad, short
}

// TestLabUDP runs UDP at half and at 1.5 times the shaped rate (200
// Mbit/s: see udpLabRate), from 3.21's
// client and ours under both sender behaviours, into our server and 3.21's.
// Above the rate the sender's own tbf queue overflows: 3.21's blocking
// socket and our default sender wait for it, ours with --keep-rate drops
// and counts; none of them counts the host's drops as sent or as lost.
func TestLabUDP(t *testing.T) {
	p := newLabPeers(t, udpLabRate)
	if p == nil {
		return
	}
	servers := map[string]int{"ours": p.serve(t, p.ours), "3.21": p.serve(t, p.i321)}
	for _, srv := range []string{"ours", "3.21"} {
		for _, rate := range []float64{udpLabRate / 2, 1.5 * udpLabRate} {
			for _, cl := range []string{"3.21", "ours", "ours --keep-rate"} {
				c := udpCase{client: cl, rate: rate}
				args := []string{"-u", "-t", "1", "-l", "1400", "-b", strconv.FormatFloat(rate, 'f', 0, 64)}
				bin := p.ours
				switch cl {
				case "3.21":
					bin = p.i321
				case "ours --keep-rate":
					args = append(args, "--keep-rate")
				}
				var bad, short []string
				var machine bool
				for try := 1; try <= labTries; try++ {
					pr := pathlab.StartCPUPressure()
					r := p.client(t, bin, servers[srv], args...)
					if bad, short = c.check(r); len(bad)+len(short) == 0 {
						t.Logf("%s client into %s server at %.0f: sent %+v, received %+v", cl, srv, rate, r.End.SumSent, r.End.SumReceived)
						break
					}
					t.Logf("%s client into %s server at %.0f: try %d: %v %v", cl, srv, rate, try, bad, short)
					machine = starved(t, pr)
				}
				assert.Empty(t, bad, "%s client into %s server at %.0f bit/s", cl, srv, rate)
				if !machine {
					assert.Empty(t, short, "%s client into %s server at %.0f bit/s", cl, srv, rate)
				}
			}
		}
	}
}
