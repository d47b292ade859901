package throughput

import (
	"encoding/json"
	"fmt"
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"strings"
)

// hostCounters are one end's interface- and host-wide counters over a
// test's window, as that end read them (and, for a netperfkit peer, sent
// them as the results exchange's loss_counters key): each counter's change,
// or why it has none.
type hostCounters struct {
	Iface   string            `json:"iface,omitempty"`
	Deltas  map[string]int64  `json:"deltas,omitempty"`
	Unknown map[string]string `json:"unknown,omitempty"`
}

// Keys of hostCounters. The allowance counters keep the ENA driver's names.
const (
	ctrTxDrop      = "tx_dropped" // /proc/net/dev tx drop
	ctrRxDrop      = "rx_dropped" // /proc/net/dev rx drop (dropped + missed)
	ctrBWIn        = "bw_in_allowance_exceeded"
	ctrBWOut       = "bw_out_allowance_exceeded"
	ctrPPS         = "pps_allowance_exceeded"
	ctrConntrackAl = "conntrack_allowance_exceeded"
	ctrLinklocal   = "linklocal_allowance_exceeded"
	ctrSoftnet     = "softnet_dropped"    // /proc/net/softnet_stat, every CPU
	ctrReasm       = "ReasmFails"         // /proc/net/snmp Ip (and Ip6)
	ctrConntrack   = "nf_conntrack_drops" // /proc/net/stat/nf_conntrack drop+early_drop+insert_failed
	ctrRcvbuf      = "RcvbufErrors"       // /proc/net/snmp Udp (and Udp6)
)

// value is the change of counter k, false when the end did not know it.
func (h *hostCounters) value(k string) (int64, bool) {
	if h == nil {
		return 0, false
	}
	v, ok := h.Deltas[k]
	return v, ok
}

// why is the reason counter k is unknown.
func (h *hostCounters) why(k, end string) string {
	if h == nil {
		return end
	}
	if r := h.Unknown[k]; r != "" {
		return r
	}
	return k + ": not read"
}

// decodeHostCounters is the peer's loss_counters key, nil when absent or
// malformed (a stock iperf3 peer sends none).
func decodeHostCounters(raw json.RawMessage) *hostCounters {
	if len(raw) == 0 {
		return nil
	}
	var h hostCounters
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil
	}
	for k, v := range h.Deltas {
		if v < 0 {
			delete(h.Deltas, k)
		}
	}
	return &h
}

// ledgerIn is what the two ends know of one direction.
type ledgerIn struct {
	sent      int64  // datagrams the sender sent in the counted time
	refused   *int64 // refused by its host and dropped; nil: the sender did not say
	retried   int64  // refused and sent again (not lost)
	received  int64  // distinct datagrams read
	reordered int64
	dups      *int64 // nil: the receiver did not say
	socket    *int64 // SO_MEMINFO drops; nil: unknown (socketWhy)
	socketWhy string
	late      *int64 // read after the receiver stopped counting; nil: unknown (lateWhy)
	lateWhy   string
	snd, rcv  *hostCounters // nil: that end did not say (sndWhy, rcvWhy)
	sndWhy    string
	rcvWhy    string
}

// sharedLine describes a line read from interface- or host-wide counters.
type sharedLine struct {
	name, scope string
	rcv         bool // the receiving end's counters, else the sender's
	keys        []string
	source      string
}

// sharedLines are in the order the remainder is attributed to them.
var sharedLines = []sharedLine{
	{LineReceiverNIC, flowmodel.ScopeInterface, true, []string{ctrRxDrop}, "rx drop (/proc/net/dev)"},
	{LineReceiverAllowance, flowmodel.ScopeInterface, true, []string{ctrBWIn, ctrPPS, ctrConntrackAl, ctrLinklocal}, "ENA bw_in, pps, conntrack, linklocal allowance exceeded (queued or dropped)"},
	{LineReceiverBacklog, flowmodel.ScopeHost, true, []string{ctrSoftnet}, "per-CPU backlog drops (/proc/net/softnet_stat)"},
	{LineReceiverReasm, flowmodel.ScopeHost, true, []string{ctrReasm}, "Ip ReasmFails (/proc/net/snmp)"},
	{LineReceiverConntrack, flowmodel.ScopeHost, true, []string{ctrConntrack}, "nf_conntrack drop, early_drop, insert_failed"},
	{LineSenderNIC, flowmodel.ScopeInterface, false, []string{ctrTxDrop}, "tx drop (/proc/net/dev)"},
	{LineSenderAllowance, flowmodel.ScopeInterface, false, []string{ctrBWOut, ctrPPS}, "ENA bw_out, pps allowance exceeded (queued or dropped)"},
}

// lineOrder is the order of a Ledger's lines: the way a datagram goes.
var lineOrder = []string{LineSenderRefused, LineSenderNIC, LineSenderAllowance, LinePath, LineReceiverNIC,
	LineReceiverAllowance, LineReceiverBacklog, LineReceiverReasm, LineReceiverConntrack, LineReceiverSocket, LineReceiverLate}

// buildLedger balances one direction: the exact counts first, then the
// shared counters each take at most what is left, then the path the rest.
func buildLedger(in ledgerIn) *Ledger {
	l := &Ledger{Received: in.received, Reordered: in.reordered, Duplicated: in.dups, Offered: in.sent, Retried: in.retried}
	lines := map[string]LedgerLine{}
	refused := LedgerLine{Name: LineSenderRefused, Scope: flowmodel.ScopeSocket, Count: in.refused,
		Source: "ENOBUFS from the sending host's queue (IP_RECVERR), not sent"}
	if in.refused == nil {
		refused.Unknown = in.sndWhy
	} else {
		l.Offered += *in.refused
	}
	lines[LineSenderRefused] = refused
	socket := LedgerLine{Name: LineReceiverSocket, Scope: flowmodel.ScopeSocket, Count: in.socket, Unknown: in.socketWhy,
		Source: "SO_MEMINFO drops of the receiving socket (full receive buffer, bad checksum)"}
	if v, ok := in.rcv.value(ctrRcvbuf); ok && in.socket != nil {
		socket.Counter = i64(v)
		socket.Source += "; counter: the receiving host's UDP RcvbufErrors"
	}
	lines[LineReceiverSocket] = socket
	lines[LineReceiverLate] = LedgerLine{Name: LineReceiverLate, Scope: flowmodel.ScopeSocket, Count: in.late, Unknown: in.lateWhy,
		Source: "read after the receiver's count ended (iperf3 counts these lost)"}
	rest := in.sent - in.received
	for _, v := range []*int64{in.socket, in.late} {
		if v != nil {
			rest -= *v
		}
	}
	if rest < 0 {
		l.Disagreement = disagreement(in, rest)
		rest = 0
	}
	for _, sl := range sharedLines {
		lines[sl.name] = sl.attribute(in, &rest)
	}
	path := LedgerLine{Name: LinePath, Scope: flowmodel.ScopeRemainder, Count: i64(rest),
		Source: "sent - received - every other line"}
	var incl []string
	if in.rcv == nil || in.socket == nil || in.late == nil {
		incl = append(incl, "the receiving end's lines")
	}
	if in.snd == nil {
		incl = append(incl, "the sending end's NIC lines")
	}
	if len(incl) > 0 {
		path.Unknown = "includes " + strings.Join(incl, " and ")
	}
	lines[LinePath] = path
	for _, n := range lineOrder {
		l.Lines = append(l.Lines, lines[n])
	}
	return l
}

// attribute is sl's line: the counters' change, of which the line takes at
// most *rest.
func (sl sharedLine) attribute(in ledgerIn, rest *int64) LedgerLine {
	h, end := in.snd, in.sndWhy
	if sl.rcv {
		h, end = in.rcv, in.rcvWhy
	}
	ln := LedgerLine{Name: sl.name, Scope: sl.scope, Source: sl.source}
	if h != nil && h.Iface != "" && sl.scope == flowmodel.ScopeInterface {
		ln.Source = h.Iface + ": " + sl.source
	}
	var sum int64
	known := false
	for _, k := range sl.keys {
		if v, ok := h.value(k); ok {
			sum, known = sum+v, true
		}
	}
	if !known {
		ln.Unknown = h.why(sl.keys[0], end)
		return ln
	}
	take := min(sum, *rest)
	*rest -= take
	ln.Count = i64(take)
	if sum != take || sl.scope != flowmodel.ScopeSocket {
		ln.Counter = i64(sum)
	}
	return ln
}

// disagreement names the count that makes the remainder negative.
func disagreement(in ledgerIn, rest int64) string {
	if in.socket != nil && *in.socket > 0 {
		return fmt.Sprintf("receiver socket drops (SO_MEMINFO) %d exceed sent - received %d by %d",
			*in.socket, in.sent-in.received, -rest)
	}
	return fmt.Sprintf("received %d exceeds sent %d by %d (the sender's count disagrees)", in.received, in.sent, -rest)
}
