package throughput

import (
	"runtime"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// Why a ledger line is unknown, by the end that would know it.
const whyStockPeer = "a stock iperf3 far end sends nothing"

// whyNoSocket is why this host's socket drop counter is unknown.
func whyNoSocket() string {
	if ledgerAvailable {
		return "the socket's drop counter (SO_MEMINFO) could not be read"
	}
	return "the socket's drop counter is not available on " + runtime.GOOS
}

// ledgerSums accumulates one direction's exact figures over its streams.
type ledgerSums struct {
	in                    ledgerIn
	refused, dups, socket int64
	late                  int64
	refusedOK, dupsOK     bool
	socketOK, lateOK      bool
	socketWhy             string
}

// directionLedger balances the UDP direction reverse (server to client
// when true) from this side's streams and the peer's results: the far end
// of each stream says what only it can know.
func (t *testRun) directionLedger(reverse bool, remote *iperfwire.Results, peer map[int]iperfwire.Stream) *Ledger {
	peerCounters := decodeHostCounters(remote.LossCounters)
	ours := peerCounters != nil // a netperfkit peer always sends loss_counters in a UDP test
	a := ledgerSums{refusedOK: true, dupsOK: true, socketOK: true, lateOK: true}
	n := 0
	for _, s := range t.eng.streams {
		if !s.udp || t.streamReverse(s) != reverse {
			continue
		}
		ws, ok := peer[s.id]
		if !ok {
			return nil
		}
		n++
		if s.send {
			a.addLocalSender(t, s)
			a.addPeerReceiver(ws)
		} else {
			a.addLocalReceiver(t, s)
			a.addPeerSender(ws, ours)
		}
	}
	if n == 0 {
		return nil
	}
	in := a.in
	in.snd, in.rcv = t.counters, peerCounters
	if reverse != t.server { // the peer sends this direction
		in.snd, in.rcv = peerCounters, t.counters
	}
	in.sndWhy, in.rcvWhy = whyStockPeer, whyStockPeer
	if a.refusedOK {
		in.refused = i64(a.refused)
	}
	if a.dupsOK {
		in.dups = i64(a.dups)
	}
	if a.socketOK {
		in.socket = i64(a.socket)
	} else {
		in.socketWhy = a.socketWhy
	}
	if a.lateOK {
		in.late = i64(a.late)
	} else {
		in.lateWhy = whyStockPeer
	}
	return buildLedger(in)
}

func (a *ledgerSums) addLocalSender(t *testRun, s *flowStream) {
	_, packets, _, _ := t.localCounts(s)
	drops, retries := t.localRefused(s)
	a.in.sent += packets
	a.refused += drops
	a.in.retried += retries
}

func (a *ledgerSums) addLocalReceiver(t *testRun, s *flowStream) {
	r := t.recvCounts(s)
	_, _, _, ooo := t.localCounts(s)
	a.in.received += r.Received
	a.in.reordered += ooo - r.Duplicated
	a.dups += r.Duplicated
	a.late += r.Late
	a.addSocket(r.SocketDrops, whyNoSocket())
}

func (a *ledgerSums) addSocket(v *int64, why string) {
	if v == nil {
		a.socketOK, a.socketWhy = false, why
		return
	}
	a.socket += *v
}

// addPeerReceiver takes the far receiver's figures: its loss_ledger key
// from a netperfkit peer, else iperf3's own (expected minus lost, which
// nets reordered datagrams out as iperf3 does).
func (a *ledgerSums) addPeerReceiver(ws iperfwire.Stream) {
	if r := decodeRecvLedger(ws.LossLedger); r != nil {
		a.in.received += r.Received
		a.in.reordered += max(0, intOr0(ws.OutOfOrder)-r.Duplicated)
		a.dups += r.Duplicated
		a.late += r.Late
		a.addSocket(r.SocketDrops, "the far end's socket drop counter is not available")
		return
	}
	a.in.received += counted(ws.Packets, ws.OmittedPackets) - counted(ws.Errors, ws.OmittedErrors)
	a.in.reordered += intOr0(ws.OutOfOrder)
	a.dupsOK, a.lateOK = false, false
	a.addSocket(nil, whyStockPeer)
}

// addPeerSender takes the far sender's figures: datagrams sent, and its
// refusals, which a netperfkit peer writes only when there were any.
func (a *ledgerSums) addPeerSender(ws iperfwire.Stream, ours bool) {
	a.in.sent += counted(ws.Packets, ws.OmittedPackets)
	a.refused += intOr0(ws.LocalDrops)
	a.in.retried += intOr0(ws.LocalRetries)
	a.refusedOK = a.refusedOK && ours
}

// counted is a results entry's total less its omitted part.
func counted(total, omitted *iperfwire.Int) int64 {
	return intOr0(total) - intOr0(omitted)
}
