package flowmodel

import (
	"fmt"
	"strings"
)

// Ledger says where the datagrams of one UDP direction went, from the
// sender's offer to the receiver's read (Summary.Ledger). Offered equals the
// sum of every known line's Count, plus Received, whenever Disagreement
// is empty (Exact says whether every line of this test's own is known):
// the lines that only interface- or
// host-wide counters can tell (a NIC, an allowance, the backlog) take at
// most what the exact counts leave unexplained, and the path takes the
// rest.
//
// A Ledger closes after the receiver has drained its socket at the end of
// the test. Reordered and duplicated datagrams are counted apart (a
// duplicate is never Received twice), so iperf3's loss figure, which
// nets them out, is explained rather than changed.
type Ledger struct {
	// Offered is what the sending application offered: datagrams sent
	// plus those its host refused and it dropped (Config.UDPKeepRate).
	Offered int64 `json:"offered"`
	// Lines are the places a datagram can end up, in the order a datagram
	// meets them (LineSenderRefused ... LineReceiverLate).
	Lines []LedgerLine `json:"lines"`
	// Received is the distinct datagrams the receiving application read
	// while the test counted.
	Received int64 `json:"received"`
	// Reordered is datagrams that arrived after a later one; Duplicated
	// is copies of a datagram already received (nil when the receiver
	// does not say: a stock iperf3 counts both as out of order).
	Reordered  int64  `json:"reordered"`
	Duplicated *int64 `json:"duplicated"`
	// Retried is datagrams the sender's host refused and the sender
	// offered again once its queue had room (Counts.LocalRetries): not
	// lost, so on no line, but the host held the rate back.
	Retried int64 `json:"retried,omitempty"`
	// Disagreement names the counter that disagrees when the exact counts
	// leave a negative remainder (the path line is then 0, never
	// negative).
	Disagreement string `json:"disagreement,omitempty"`
}

// LedgerLine is one place a datagram can end up.
type LedgerLine struct {
	// Name is one of the Line* constants.
	Name string `json:"name"`
	// Count is the datagrams of this test that ended here; nil when this
	// host cannot know (Unknown says why), which is never the same as 0.
	Count *int64 `json:"count"`
	// Counter is the change of the source counter over the test window
	// where it counts more than this test (ScopeInterface, ScopeHost):
	// Count is the part of it the exact counts leave room for. For the
	// receiving socket's line it is the receiving host's UDP RcvbufErrors,
	// a cross-check.
	Counter *int64 `json:"counter,omitempty"`
	// Scope says what the source counter covers: "socket" (exact for
	// this test), "interface", "host" (other traffic included) or
	// "remainder" (the path).
	Scope string `json:"scope"`
	// Source names the counter, with the interface where there is one.
	Source string `json:"source"`
	// Unknown says why Count is nil, or, for the path line, what else it
	// includes (a stock iperf3 far end's lines).
	Unknown string `json:"unknown,omitempty"`
}

// Names of a Ledger's lines.
const (
	LineSenderRefused     = "sender_refused"      // ENOBUFS from the sending host's queue, dropped by the sender
	LineSenderNIC         = "sender_nic"          // the sending interface's tx drops
	LineSenderAllowance   = "sender_allowance"    // ENA bw_out/pps allowance: queued or dropped
	LinePath              = "path"                // the remainder, never negative
	LineReceiverNIC       = "receiver_nic"        // the receiving interface's rx drops and misses
	LineReceiverAllowance = "receiver_allowance"  // ENA bw_in/pps/conntrack/linklocal allowance
	LineReceiverBacklog   = "receiver_backlog"    // /proc/net/softnet_stat drops
	LineReceiverReasm     = "receiver_reassembly" // Ip ReasmFails
	LineReceiverConntrack = "receiver_conntrack"  // nf_conntrack drop, early_drop, insert_failed
	LineReceiverSocket    = "receiver_socket"     // SO_MEMINFO drops of the receiving socket
	LineReceiverLate      = "receiver_late"       // read after the receiver's count ended
)

// Scopes of a LedgerLine's source counter (LedgerLine.Scope).
const (
	ScopeSocket    = "socket"
	ScopeInterface = "interface"
	ScopeHost      = "host"
	ScopeRemainder = "remainder"
)

// Line returns the line named name.
func (l *Ledger) Line(name string) (LedgerLine, bool) {
	if l == nil {
		return LedgerLine{}, false
	}
	for _, ln := range l.Lines {
		if ln.Name == name {
			return ln, true
		}
	}
	return LedgerLine{}, false
}

// Exact reports whether the ledger is exact for this pair of ends: Offered
// equals the known lines plus Received, and every line whose counter
// belongs to this test alone (ScopeSocket: the sender's refusals, the
// receiving socket's drops, late reads) is known, so the path line holds
// only the path and what the unknown interface- and host-wide lines (a
// veth's allowance counters, say) would hold. Two netperfkit ends give
// exact ledgers; a stock iperf3 far end does not.
func (l *Ledger) Exact() bool {
	if l == nil || l.Disagreement != "" {
		return false
	}
	sum := l.Received
	for _, ln := range l.Lines {
		switch {
		case ln.Count != nil:
			sum += *ln.Count
		case ln.Scope == ScopeSocket:
			return false
		}
	}
	return sum == l.Offered
}

// Largest returns the line with the largest known count above 0.
func (l *Ledger) Largest() (LedgerLine, bool) {
	var best LedgerLine
	found := false
	if l == nil {
		return best, false
	}
	for _, ln := range l.Lines {
		if ln.Count != nil && *ln.Count > 0 && (!found || *ln.Count > *best.Count) {
			best, found = ln, true
		}
	}
	return best, found
}

// Lost reports whether a known line holds a datagram: one was lost,
// dropped or refused somewhere (false for a nil Ledger).
func (l *Ledger) Lost() bool {
	_, any := l.Largest()
	return any
}

// String is the ledger on one line: offered, each known line above 0 and
// each unknown one, and received.
func (l *Ledger) String() string {
	if l == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "offered %d =", l.Offered)
	for _, ln := range l.Lines {
		switch {
		case ln.Count == nil:
			fmt.Fprintf(&b, " %s - (%s) +", ln.Name, ln.Unknown)
		case *ln.Count > 0 || ln.Name == LinePath:
			fmt.Fprintf(&b, " %s %d", ln.Name, *ln.Count)
			if ln.Unknown != "" {
				fmt.Fprintf(&b, " (%s)", ln.Unknown)
			}
			b.WriteString(" +")
		}
	}
	fmt.Fprintf(&b, " received %d", l.Received)
	if l.Reordered > 0 {
		fmt.Fprintf(&b, "; reordered %d", l.Reordered)
	}
	if l.Duplicated != nil && *l.Duplicated > 0 {
		fmt.Fprintf(&b, "; duplicated %d", *l.Duplicated)
	}
	if l.Retried > 0 {
		fmt.Fprintf(&b, "; %d refused and sent again", l.Retried)
	}
	if l.Disagreement != "" {
		fmt.Fprintf(&b, "; %s", l.Disagreement)
	}
	return b.String()
}
