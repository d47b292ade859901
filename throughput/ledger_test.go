package throughput

import (
	"encoding/json"
	"fmt"
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ledgerFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ledger", name))
	require.NoError(t, err)
	return string(b)
}

func TestParseNetDev(t *testing.T) {
	m, err := parseNetDev(strings.NewReader(ledgerFixture(t, "dev")))
	require.NoError(t, err)
	assert.Equal(t, netDevDrops{RxDrop: 7, TxDrop: 11}, m["eth0"])
	assert.Equal(t, netDevDrops{}, m["lo"])
	assert.Len(t, m, 4)
	_, err = parseNetDev(strings.NewReader("  eth0: 1 2 3\n"))
	assert.ErrorIs(t, err, errProcFormat)
}

func TestParseSoftnet(t *testing.T) {
	n, err := parseSoftnet(strings.NewReader("008f3c8f 00000002 00000003\n00717c39 0000000a 00000001\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(12), n, "the second column of every CPU, hexadecimal")
	_, err = parseSoftnet(strings.NewReader(ledgerFixture(t, "softnet_stat")))
	require.NoError(t, err)
	for _, bad := range []string{"", "00000001\n", "1 zz\n"} {
		_, err = parseSoftnet(strings.NewReader(bad))
		assert.ErrorIs(t, err, errProcFormat, "%q", bad)
	}
}

func TestParseConntrackStat(t *testing.T) {
	hdr := "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error\n"
	n, err := parseConntrackStat(strings.NewReader(hdr +
		"00000000 0 0 0 0 0 0 0 0 00000001 00000002 00000003 00000009\n" +
		"00000000 0 0 0 0 0 0 0 0 00000000 00000010 00000000 00000000\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(1+2+3+16), n, "insert_failed, drop and early_drop; not icmp_error")
	_, err = parseConntrackStat(strings.NewReader(ledgerFixture(t, "nf_conntrack")))
	require.NoError(t, err)
	_, err = parseConntrackStat(strings.NewReader(hdr + "0 0 0\n"))
	assert.ErrorIs(t, err, errProcFormat, "a short line")
	_, err = parseConntrackStat(strings.NewReader("entries found\n0 0\n"))
	assert.ErrorIs(t, err, errProcFormat, "no drop column")
}

func TestParseSNMP(t *testing.T) {
	m, err := parseSNMP(strings.NewReader(ledgerFixture(t, "snmp")))
	require.NoError(t, err)
	assert.Contains(t, m, "UdpRcvbufErrors")
	assert.Contains(t, m, "IpReasmFails")
	m, err = parseSNMP(strings.NewReader(ledgerFixture(t, "snmp6")))
	require.NoError(t, err)
	assert.Contains(t, m, "Udp6RcvbufErrors")
	assert.Contains(t, m, "Ip6ReasmFails")
	for _, bad := range []string{"Udp: InErrors\n", "Udp: InErrors\nUdp: x\n", "Udp InErrors x\n", "Udp6RcvbufErrors x\n"} {
		_, err = parseSNMP(strings.NewReader(bad))
		assert.ErrorIs(t, err, errProcFormat, "%q", bad)
	}
}

// FuzzParseLedgerProc feeds every /proc parser of the ledger the same
// input: none may panic, and a parsed value is never negative where the
// file holds unsigned counters.
func FuzzParseLedgerProc(f *testing.F) {
	for _, name := range []string{"dev", "softnet_stat", "nf_conntrack", "snmp", "snmp6"} {
		f.Add(ledgerFixture(f, name))
	}
	f.Add("Udp: InErrors\n")
	f.Add("eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n")
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := parseNetDev(strings.NewReader(s)); err == nil {
			for _, d := range m {
				_ = d
			}
		}
		if n, err := parseSoftnet(strings.NewReader(s)); err == nil && n < 0 {
			t.Fatalf("softnet sum %d", n)
		}
		if n, err := parseConntrackStat(strings.NewReader(s)); err == nil && n < 0 {
			t.Fatalf("conntrack sum %d", n)
		}
		_, _ = parseSNMP(strings.NewReader(s))
	})
}

// FuzzDecodeLossKeys: the peer's loss_counters and loss_ledger keys decode
// to nil or to values without a negative count, never a panic.
func FuzzDecodeLossKeys(f *testing.F) {
	f.Add(`{"iface":"veth0","deltas":{"rx_dropped":3,"RcvbufErrors":-1},"unknown":{"pps_allowance_exceeded":"veth"}}`)
	f.Add(`{"received":10,"duplicated":1,"late":0,"socket_drops":4}`)
	f.Add(`{"received":-1}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, s string) {
		if h := decodeHostCounters(json.RawMessage(s)); h != nil {
			for k, v := range h.Deltas {
				require.GreaterOrEqual(t, v, int64(0), k)
			}
		}
		if r := decodeRecvLedger(json.RawMessage(s)); r != nil {
			require.GreaterOrEqual(t, r.Received, int64(0))
			require.GreaterOrEqual(t, r.Late, int64(0))
			if r.SocketDrops != nil {
				require.GreaterOrEqual(t, *r.SocketDrops, int64(0))
			}
		}
	})
}

// ours is a netperfkit end's counters on veth: everything but allowance.
func vethCounters(d map[string]int64) *hostCounters {
	h := &hostCounters{Iface: "veth0", Deltas: map[string]int64{}, Unknown: map[string]string{}}
	for _, k := range []string{ctrTxDrop, ctrRxDrop, ctrSoftnet, ctrReasm, ctrConntrack, ctrRcvbuf} {
		h.Deltas[k] = d[k]
	}
	for _, k := range []string{ctrBWIn, ctrBWOut, ctrPPS, ctrConntrackAl, ctrLinklocal} {
		h.Unknown[k] = "veth0: veth has no allowance counters (not ENA)"
	}
	return h
}

func lineCount(t *testing.T, l *Ledger, name string) *int64 {
	t.Helper()
	ln, ok := l.Line(name)
	require.True(t, ok, name)
	return ln.Count
}

func TestBuildLedgerOwnPair(t *testing.T) {
	l := buildLedger(ledgerIn{sent: 1000, refused: i64(50), retried: 3, received: 900, reordered: 4, dups: i64(2),
		socket: i64(30), late: i64(5),
		snd: vethCounters(map[string]int64{ctrTxDrop: 1000}),
		rcv: vethCounters(map[string]int64{ctrRxDrop: 10, ctrSoftnet: 2, ctrRcvbuf: 30})})
	assert.Equal(t, int64(1050), l.Offered)
	assert.True(t, l.Exact(), "%s", l)
	assert.Equal(t, int64(10), *lineCount(t, l, LineReceiverNIC))
	assert.Equal(t, int64(2), *lineCount(t, l, LineReceiverBacklog))
	// 65 unexplained by the exact lines; 12 to the receiver's, then the
	// sender's tx drops (1000 interface-wide) take at most what is left.
	nic, _ := l.Line(LineSenderNIC)
	assert.Equal(t, int64(53), *nic.Count)
	assert.Equal(t, int64(1000), *nic.Counter, "the interface's own change stays visible")
	assert.Equal(t, int64(0), *lineCount(t, l, LinePath))
	assert.Nil(t, lineCount(t, l, LineSenderAllowance))
	sock, _ := l.Line(LineReceiverSocket)
	assert.Equal(t, int64(30), *sock.Counter, "RcvbufErrors as the socket line's cross-check")
	names := []string{}
	for _, ln := range l.Lines {
		names = append(names, ln.Name)
	}
	assert.Equal(t, lineOrder, names)
	assert.Contains(t, l.String(), "3 refused and sent again")
}

func TestBuildLedgerStockReceiver(t *testing.T) {
	l := buildLedger(ledgerIn{sent: 1000, refused: i64(0), received: 940, reordered: 1,
		snd: vethCounters(nil), rcvWhy: whyStockPeer, socketWhy: whyStockPeer, lateWhy: whyStockPeer})
	assert.False(t, l.Exact())
	assert.Empty(t, l.Disagreement)
	path, _ := l.Line(LinePath)
	assert.Equal(t, int64(60), *path.Count)
	assert.Contains(t, path.Unknown, "the receiving end's lines")
	for _, n := range []string{LineReceiverNIC, LineReceiverSocket, LineReceiverLate, LineReceiverBacklog} {
		ln, _ := l.Line(n)
		assert.Nil(t, ln.Count, n)
		assert.Equal(t, whyStockPeer, ln.Unknown, n)
	}
	assert.Nil(t, l.Duplicated)
}

func TestBuildLedgerNegativeRemainder(t *testing.T) {
	l := buildLedger(ledgerIn{sent: 100, refused: i64(0), received: 90, socket: i64(15), late: i64(0),
		snd: vethCounters(nil), rcv: vethCounters(nil)})
	assert.Equal(t, int64(0), *lineCount(t, l, LinePath), "never negative")
	assert.Contains(t, l.Disagreement, "socket drops (SO_MEMINFO) 15 exceed sent - received 10 by 5")
	assert.False(t, l.Exact())
	l = buildLedger(ledgerIn{sent: 100, received: 101})
	assert.Contains(t, l.Disagreement, "received 101 exceeds sent 100")
}

// FuzzBuildLedger: whatever the counts, no line is negative, the path
// takes the remainder, and without a disagreement the ledger closes.
func FuzzBuildLedger(f *testing.F) {
	f.Add(int64(1000), int64(5), int64(900), int64(30), int64(2), int64(7), int64(100))
	f.Add(int64(10), int64(0), int64(20), int64(0), int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, sent, refused, received, socket, late, rxDrop, txDrop int64) {
		const lim = 1 << 40
		for _, v := range []int64{sent, refused, received, socket, late, rxDrop, txDrop} {
			if v < 0 || v > lim {
				return
			}
		}
		l := buildLedger(ledgerIn{sent: sent, refused: i64(refused), received: received, socket: i64(socket), late: i64(late),
			dups: i64(0), snd: vethCounters(map[string]int64{ctrTxDrop: txDrop}), rcv: vethCounters(map[string]int64{ctrRxDrop: rxDrop})})
		sum := l.Received
		for _, ln := range l.Lines {
			if ln.Count != nil {
				require.GreaterOrEqual(t, *ln.Count, int64(0), ln.Name)
				sum += *ln.Count
			}
		}
		if l.Disagreement == "" {
			require.Equal(t, l.Offered, sum)
			require.True(t, l.Exact())
		}
	})
}

func TestUDPStatsDuplicates(t *testing.T) {
	var s udpRecvStats
	for _, c := range []uint64{1, 2, 4, 3, 3, 2, 5, 5} {
		s.add(c, 0, 0, 100)
	}
	assert.Equal(t, int64(8), s.Datagrams)
	assert.Equal(t, int64(3), s.Duplicated, "3, 2 and 5 again")
	assert.Equal(t, int64(4), s.OutOfOrder, "iperf3's figure is unchanged: every count at or below the highest")
	assert.Equal(t, uint64(5), s.Highest)
	// A jump past the window forgets the old counts: a very late one is
	// taken as reordered, not duplicated.
	s.add(5+seenWindow+10, 0, 0, 100)
	s.add(4, 0, 0, 100)
	assert.Equal(t, int64(3), s.Duplicated)
	s.add(5+seenWindow+9, 0, 0, 100)
	s.add(5+seenWindow+9, 0, 0, 100)
	assert.Equal(t, int64(4), s.Duplicated)
}

func TestHostSampleDelta(t *testing.T) {
	a := hostSample{iface: "veth0", vals: map[string]int64{ctrRxDrop: 5, ctrSoftnet: 9}, unknown: map[string]string{ctrPPS: "veth"}}
	b := hostSample{iface: "veth0", vals: map[string]int64{ctrRxDrop: 8, ctrSoftnet: 2, ctrTxDrop: 1}, unknown: map[string]string{}}
	h := a.delta(b)
	assert.Equal(t, map[string]int64{ctrRxDrop: 3}, h.Deltas)
	assert.Contains(t, h.Unknown[ctrSoftnet], "went backwards")
	assert.Contains(t, h.Unknown[ctrTxDrop], "not read at the start")
	assert.Equal(t, "veth", h.Unknown[ctrPPS])
}

func ExampleLedger() {
	dup := int64(0)
	l := &Ledger{Offered: 7134, Received: 4903, Duplicated: &dup, Lines: []LedgerLine{
		{Name: LineSenderRefused, Count: i64(2082), Scope: flowmodel.ScopeSocket},
		{Name: LinePath, Count: i64(101), Scope: flowmodel.ScopeRemainder},
		{Name: LineReceiverSocket, Count: i64(48), Scope: flowmodel.ScopeSocket},
	}}
	top, _ := l.Largest()
	fmt.Println(l)
	fmt.Println(l.Exact(), top.Name)
	// Output:
	// offered 7134 = sender_refused 2082 + path 101 + receiver_socket 48 + received 4903
	// true sender_refused
}
