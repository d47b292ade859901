//go:build linux

package main

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/throughput"
)

// ledgerLab is a routed path A - M - B for the loss ledger (issue 32):
// the middle hop M drops a known share of the data datagrams with an nft
// rule and counts them, A's veth can get a tbf with a small limit, and
// the client can ask for a 4 KiB receive buffer.
type ledgerLab struct {
	lab        *pathlab.Lab
	ours, i321 string
	port       int
}

const ledgerRate = 80e6

func newLedgerLab(t *testing.T) *ledgerLab {
	t.Helper()
	lab := pathlab.New(t, &pathlab.Config{Router: true, Prefix: "np32"})
	i321 := peertest.NewIPerf3(t)
	nft := peertest.Binary(t, "apt-get install nftables", "nft")
	if t.Skipped() || lab == nil || nft == "" {
		return nil
	}
	// Data datagrams only (1400 bytes): a lost hello would count here and
	// not in the test.
	lab.M.Run(t, "nft", "add table ip np32")
	lab.M.Run(t, "nft", "add chain ip np32 hop { type filter hook forward priority 0 ; }")
	return &ledgerLab{lab: lab, ours: pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/iperf3"), i321: i321, port: 5320}
}

// causes sets the path's drop rule and the sender's qdisc.
func (l *ledgerLab) causes(t *testing.T, path, qdisc bool) {
	t.Helper()
	l.lab.M.Run(t, "nft", "flush chain ip np32 hop")
	if path {
		l.lab.M.Run(t, "nft", "add rule ip np32 hop udp length > 1000 numgen random mod 100 < 2 counter drop")
	}
	q := []string{"pfifo", "limit", "1000"}
	if qdisc {
		// limit 3 KB: two datagrams fill it at 3/4 of the offered rate,
		// even behind a sender whose 4 KiB window (the socket cause: iperf3
		// -w sizes both ends' buffers) keeps three in flight.
		q = []string{"tbf", "rate", "60mbit", "burst", "16kb", "limit", "3kb"}
	}
	l.lab.A.Run(t, "tc", append([]string{"qdisc", "replace", "dev", "veth0", "root"}, q...)...)
}

var nftCounter = regexp.MustCompile(`counter packets (\d+)`)

// nftDrops is the middle hop's drop counter (0 when there is no rule).
func (l *ledgerLab) nftDrops(t *testing.T) int64 {
	m := nftCounter.FindStringSubmatch(l.lab.M.Run(t, "nft", "list chain ip np32 hop"))
	if m == nil {
		return 0
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

func (l *ledgerLab) serve(t *testing.T, bin string) string {
	t.Helper()
	l.port++
	l.lab.B.Start(t, bin, "-s", "-p", strconv.Itoa(l.port))
	l.lab.B.WaitListening(t, l.port, 10*time.Second)
	return net.JoinHostPort(l.lab.B.Addr.String(), strconv.Itoa(l.port))
}

// ledgerRun is one test's ledger and the lab's own counters over it.
type ledgerRun struct {
	l       *throughput.Ledger
	sum     *throughput.Summary
	nft     int64
	rcvbuf  int64 // the receiving namespace's UdpRcvbufErrors delta
	offered int64
}

func (l *ledgerLab) run(t *testing.T, addr string, cfg *throughput.Config) ledgerRun {
	t.Helper()
	rcv := l.lab.B
	if cfg.Reverse {
		rcv = l.lab.A
	}
	n0, r0 := l.nftDrops(t), rcv.SNMP(t)["UdpRcvbufErrors"]
	var res *throughput.Result
	require.NoError(t, l.lab.A.Do(func() (err error) {
		res, err = throughput.Run(context.Background(), addr, cfg)
		return err
	}))
	sum := res.Upload
	if cfg.Reverse {
		sum = res.Download
	}
	require.NotNil(t, sum)
	require.NotNil(t, sum.Ledger, "a UDP result always has a ledger once results were exchanged")
	r := ledgerRun{l: sum.Ledger, sum: sum, nft: l.nftDrops(t) - n0, rcvbuf: rcv.SNMP(t)["UdpRcvbufErrors"] - r0}
	r.offered = sum.Ledger.Offered
	t.Logf("%s\n  nft dropped %d, receiver RcvbufErrors %d; iperf3 lost %d of %d", r.l, r.nft, r.rcvbuf,
		sum.Received.LostPackets, sum.Received.Packets)
	return r
}

func count(t *testing.T, l *throughput.Ledger, name string) *int64 {
	t.Helper()
	ln, ok := l.Line(name)
	require.True(t, ok, name)
	return ln.Count
}

// TestLedgerOnLab induces each cause of loss alone, then all together, and
// checks every ledger line against the counter that independently knows
// it: the path line against the middle hop's nft counter (within 0.5
// percentage points of what was offered), the socket line against the
// receiving namespace's RcvbufErrors, the sender's refusals against what
// its Result counted; offered equals every line plus received exactly for
// our pair; against 3.21's server the receiving end's lines are unknown
// and the path line says it includes them. Only counts are compared: the
// rates are whatever the machine manages.
func TestLedgerOnLab(t *testing.T) {
	l := newLedgerLab(t)
	if l == nil {
		return
	}
	cases := []struct {
		name                string
		path, qdisc, socket bool
		reverse             bool
	}{
		{"path", true, false, false, false},
		{"qdisc", false, true, false, false},
		{"socket", false, false, true, false},
		{"together", true, true, true, false},
		{"together-reverse", true, false, true, true},
	}
	servers := []struct{ name, bin string }{{"ours", l.ours}, {"iperf3-3.21", l.i321}}
	for _, srv := range servers {
		addr := l.serve(t, srv.bin)
		for _, c := range cases {
			if c.reverse && srv.bin == l.i321 {
				continue // a stock sender's lines are unknown; the forward cases show a stock receiver's
			}
			t.Run(srv.name+"/"+c.name, func(t *testing.T) {
				l.causes(t, c.path, c.qdisc)
				cfg := &throughput.Config{UDP: true, Bitrate: ledgerRate, BlockLen: 1400, Duration: time.Second,
					UDPKeepRate: true, Reverse: c.reverse}
				if c.socket {
					cfg.Window = 4 << 10
				}
				r := l.run(t, addr, cfg)
				l.check(t, r, srv.bin == l.ours, c.path, c.qdisc, c.socket)
			})
		}
	}
}

func (l *ledgerLab) check(t *testing.T, r ledgerRun, ours, path, qdisc, socket bool) {
	t.Helper()
	require.Positive(t, r.offered)
	assert.Equal(t, r.sum.Sent.Packets+r.sum.Sent.LocalDrops, r.offered)
	refused := count(t, r.l, throughput.LineSenderRefused)
	require.NotNil(t, refused, "our client sends: its refusals are known")
	assert.Equal(t, r.sum.Sent.LocalDrops, *refused)
	if qdisc {
		assert.Positive(t, *refused, "tbf with a 3 KB limit at 3/4 of the offered rate refuses datagrams")
	}
	pathN := count(t, r.l, throughput.LinePath)
	require.NotNil(t, pathN, "the path line is always a number")
	if path {
		assert.Positive(t, r.nft)
	} else {
		assert.Zero(t, r.nft)
	}
	if !ours {
		assert.False(t, r.l.Exact())
		ln, _ := r.l.Line(throughput.LinePath)
		assert.Contains(t, ln.Unknown, "receiving end's lines")
		for _, name := range []string{throughput.LineReceiverSocket, throughput.LineReceiverNIC, throughput.LineReceiverLate} {
			ln, _ := r.l.Line(name)
			assert.Nil(t, ln.Count, "%s of a stock iperf3 receiver", name)
			assert.NotEmpty(t, ln.Unknown, name)
		}
		// The path line holds the path's drops and the receiver's.
		assert.GreaterOrEqual(t, float64(*pathN), float64(r.nft)-0.005*float64(r.offered))
		return
	}
	assert.True(t, r.l.Exact(), "offered = every line + received, exactly: %s", r.l)
	assert.InDelta(t, float64(r.nft), float64(*pathN), 0.005*float64(r.offered),
		"path line %d against the middle hop's nft counter %d (0.5 pp of %d)", *pathN, r.nft, r.offered)
	sock, _ := r.l.Line(throughput.LineReceiverSocket)
	require.NotNil(t, sock.Count)
	assert.Equal(t, r.rcvbuf, *sock.Count, "socket line against the receiving namespace's RcvbufErrors")
	if sock.Counter != nil {
		assert.Equal(t, *sock.Counter, *sock.Count, "the receiver's own RcvbufErrors reading")
	}
	if socket && !qdisc { // behind the tbf the receiver may keep up
		assert.Positive(t, *sock.Count, "a 4 KiB receive buffer at %v bit/s drops", ledgerRate)
	}
	for _, name := range []string{throughput.LineSenderAllowance, throughput.LineReceiverAllowance} {
		ln, _ := r.l.Line(name)
		assert.Nil(t, ln.Count, "veth has no allowance counters")
		assert.Contains(t, ln.Unknown, "not ENA")
	}
}

// TestLedgerTextAndJSON runs examples/iperf3's own client across the lab
// with every cause on: its text has one ledger line for the direction,
// and its -J document carries the ledger as end.sum.loss_ledger, beside
// iperf3's keys, unchanged.
func TestLedgerTextAndJSON(t *testing.T) {
	l := newLedgerLab(t)
	if l == nil {
		return
	}
	addr := l.serve(t, l.ours)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	l.causes(t, true, true)
	args := []string{"-c", host, "-p", port, "-u", "-b", "80M", "-l", "1400", "-t", "1", "-w", "4K", "--keep-rate"}
	n0, r0 := l.nftDrops(t), l.lab.B.SNMP(t)["UdpRcvbufErrors"]
	out := l.lab.A.Run(t, l.ours, args...)
	t.Logf("%s\nnft dropped %d on the middle hop; the receiver's RcvbufErrors rose by %d", out,
		l.nftDrops(t)-n0, l.lab.B.SNMP(t)["UdpRcvbufErrors"]-r0)
	assert.Regexp(t, `(?m)^ledger \(upload\): offered \d+ = sender_refused \d+ \(.*path \d+ .* received \d+; unknown sender_allowance, receiver_allowance: veth0: veth has no allowance counters \(not ENA\)$`, out)
	doc := l.lab.A.Run(t, l.ours, append(args, "-J")...)
	var d struct {
		End struct {
			Sum struct {
				LostPackets *int64             `json:"lost_packets"`
				Ledger      *throughput.Ledger `json:"loss_ledger"`
			} `json:"sum"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &d))
	require.NotNil(t, d.End.Sum.LostPackets, "iperf3's key stays")
	require.NotNil(t, d.End.Sum.Ledger, "%s", doc)
	assert.True(t, d.End.Sum.Ledger.Exact(), "%s", d.End.Sum.Ledger)
}
