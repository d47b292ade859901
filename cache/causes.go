package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// Causes says what the connection set-ups of a run or of a probe run
// waited on, each cause counted where the kernel, the resolver or the
// client's budget says so (From), and which of them holds the tail.
//
// The causes, as the maps' keys:
//   - "syn_retransmit": the connect's SYN (or the server's SYN-ACK) was
//     lost and sent again, which costs the kernel's initial retransmission
//     timeout, 1 s: tcpi_total_retrans (and, on linux 6.7+,
//     tcpi_total_rto) of TCP_INFO read right after the connect. A full
//     listen queue at the server drops SYNs the same way, and the client's
//     kernel cannot tell the two apart: for a remote endpoint
//     syn_retransmit includes a full listen queue.
//   - "listen_queue": SYNs the server's full listen queue dropped, known
//     only for a local endpoint (loopback, or an address of an interface in
//     this network namespace), whose server's kernel counts its drops where
//     the run can read them: TcpExtListenDrops of the namespace, read before
//     and after a run (RunResult) or a probe run (ProbeSummary; a single
//     probe's Causes never has it). As many of the SYNs sent again as the
//     counter rose move from syn_retransmit to listen_queue, with their
//     share of the connects and of the time. The counter is the
//     namespace's: another client's drop at another local listener counts
//     too, bounded by the SYNs the run's own connects sent again.
//   - "dns_retry": a query of the name's lookup timed out and was sent
//     again (the resolver's timeout, 5 s by default in resolv.conf),
//     counted on each query the resolver dials. Names are looked up with
//     Go's own resolver (PreferGo), whose queries can be seen; Go sends A
//     and AAAA in parallel.
//   - "tls_overrun", "auth_overrun", "slots_overrun": the TLS handshake,
//     AUTH or CLUSTER SLOTS took 150 ms or more beyond its round trips at
//     the connection's RTT (TCP_INFO's, else the connect's own time). A
//     server flight lost after the handshake's first RTT sample costs the
//     200 ms minimum retransmission timeout (1 s before any sample), and
//     the client's TCP_INFO rarely shows it, since the server resends it:
//     the overrun is the evidence.
//   - "client_budget": the set-up ran out of the client's connection budget
//     (Endpoint.ConnectTimeout; glide's "connection attempt timed out",
//     classified by glide's typed errors). Such an operation failed.
//
// A cause's time is the duration of the phase that waited on it (a
// connect that took 1.02 s added 1.02 s), not a kernel counter. Causes is
// a plain value; its maps are nil when nothing waited.
type Causes struct {
	// Connects counts, per cause, the connection set-ups that waited on
	// it.
	Connects map[string]int64 `json:"connects,omitempty"`
	// Added sums, per cause, the duration of the phases that waited on
	// it.
	Added map[string]time.Duration `json:"added_ns,omitempty"`
	// Events counts, per cause, what its source counted: the SYNs sent
	// again (TCP_INFO, summed over the connects), the DNS queries that
	// timed out; for the other causes it is Connects.
	Events map[string]int64 `json:"events,omitempty"`
	// Tail names the cause that holds the p99, when one does: "p99 1.02 s:
	// 14 of 487 connects (2.9 %) waited for a SYN retransmission (1 s)".
	Tail string `json:"tail,omitempty"`
	// From says where the counts came from: which TCP_INFO fields the
	// kernel gave, the budget, what could not be counted.
	From string `json:"from,omitempty"`
}

// cause indexes the causes.
type cause uint8

const (
	causeSYN cause = iota
	causeDNS
	causeTLS
	causeAuth
	causeSlots
	causeBudget
	causeListen
	numCauses
)

var causeNames = [numCauses]string{"syn_retransmit", "dns_retry", "tls_overrun", "auth_overrun", "slots_overrun", "client_budget", "listen_queue"}

// causeWaits completes "N of M connects ..." in a tail.
var causeWaits = [numCauses]string{
	"waited for a SYN retransmission",
	"waited for a DNS query to be sent again",
	"had a TLS handshake past its round trips (a lost flight)",
	"had an AUTH past its round trip (a lost flight)",
	"had a CLUSTER SLOTS past its round trip (a lost flight)",
	"ran out of the client's connection budget",
	"waited for a SYN that the server's full listen queue dropped",
}

// overrunMin is how far past its round trips a TLS, AUTH or CLUSTER SLOTS
// phase must run to be counted as waiting on a lost flight: three
// quarters of linux's 200 ms minimum retransmission timeout.
const overrunMin = 150 * time.Millisecond

// tcpInfo is what a connect's cause needs of the kernel's TCP_INFO.
type tcpInfo struct {
	rtt                time.Duration
	retrans, rto       uint32
	hasRetrans, hasRTO bool
	size               int // the bytes the kernel gave
}

// notesKey carries an operation's or probe's *notes in its context.
type notesKey struct{}

// notes collects what one operation's (or probe's) connection set-ups
// waited on, as the dial goes. One worker uses it at a time; only
// dnsTimeouts is written from the resolver's goroutines.
type notes struct {
	connects int
	mask     uint16
	added    [numCauses]time.Duration
	events   [numCauses]int64
	// rtt is the last connection's round trip, for the phases after its
	// connect.
	rtt time.Duration
	// kernel is the size of the last TCP_INFO the kernel gave (0: none
	// read, -1: none readable).
	kernel      int
	hasRTO      bool
	dnsTimeouts atomic.Int32
}

func withNotes(ctx context.Context, n *notes) context.Context {
	return context.WithValue(ctx, notesKey{}, n)
}

func contextNotes(ctx context.Context) *notes {
	n, _ := ctx.Value(notesKey{}).(*notes)
	return n
}

func (n *notes) add(c cause, d time.Duration) {
	n.addEvents(c, d, 1)
}

// addEvents notes cause c, which added d and which its source counted k
// times.
func (n *notes) addEvents(c cause, d time.Duration, k int64) {
	n.mask |= 1 << c
	n.added[c] += d
	n.events[c] += k
}

func (n *notes) reset() {
	n.connects, n.mask, n.added, n.events, n.rtt = 0, 0, [numCauses]time.Duration{}, [numCauses]int64{}, 0
}

// connected notes a connect that took took on nc: its SYN retransmissions
// from TCP_INFO, and the connection's RTT for the phases after it.
func (n *notes) connected(nc net.Conn, took time.Duration) {
	if n == nil {
		return
	}
	n.connects++
	n.rtt = took
	ti, ok := readTCPInfo(nc)
	if !ok {
		n.kernel = -1
		return
	}
	n.kernel, n.hasRTO = ti.size, ti.hasRTO
	if ti.rtt > 0 {
		n.rtt = ti.rtt
	}
	if syns := max(ti.retrans, ti.rto); syns > 0 {
		n.addEvents(causeSYN, took, int64(syns))
	}
}

// overran notes phase c when it took took, more than overrunMin past
// trips round trips of the connection.
func (n *notes) overran(c cause, took time.Duration, trips int) {
	if n != nil && n.rtt > 0 && took-time.Duration(trips)*n.rtt >= overrunMin {
		n.add(c, took)
	}
}

// failed notes an operation that failed after took with err, when err is
// the client's connection budget running out.
func (n *notes) failed(err error, took time.Duration) {
	var e *Error
	if !errors.As(err, &e) {
		return
	}
	if e.Kind == ErrConnectTimeout || (isSetup(e.Phase) || e.Phase == PhaseDNS) && e.Kind != ErrCanceled && isTimeout(e.Err) {
		n.add(causeBudget, took)
	}
}

// lookupResolver returns the resolver of one lookup: Go's own (PreferGo),
// or a copy of Endpoint.Resolver, whose queries are dialled through a
// wrapper that notes the ones that time out. A resolver of its own per
// lookup: net.Resolver merges concurrent lookups of one name, which would
// show their queries to one of them only.
func (d *dialer) lookupResolver(n *notes) *net.Resolver {
	base := d.ep.Resolver
	r := &net.Resolver{PreferGo: true}
	if base != nil {
		r.PreferGo, r.StrictErrors = base.PreferGo, base.StrictErrors
	}
	dial := (&net.Dialer{}).DialContext
	if base != nil && base.Dial != nil {
		dial = base.Dial
	}
	r.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return c, err
		}
		// Go's resolver frames a net.PacketConn's messages as datagrams:
		// the wrapper keeps a datagram connection's methods.
		if pc, ok := c.(net.PacketConn); ok {
			return &dnsPacketConn{dnsStreamConn: dnsStreamConn{Conn: c, n: n}, pc: pc}, nil
		}
		return &dnsStreamConn{Conn: c, n: n}, nil
	}
	return r
}

// dnsStreamConn and dnsPacketConn note a DNS query whose answer did not
// come in time.
type dnsStreamConn struct {
	net.Conn
	n *notes
}

func (c *dnsStreamConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	if err != nil && isTimeout(err) {
		c.n.dnsTimeouts.Add(1)
	}
	return k, err
}

type dnsPacketConn struct {
	dnsStreamConn
	pc net.PacketConn
}

func (c *dnsPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	k, a, err := c.pc.ReadFrom(b)
	if err != nil && isTimeout(err) {
		c.n.dnsTimeouts.Add(1)
	}
	return k, a, err
}

func (c *dnsPacketConn) WriteTo(b []byte, a net.Addr) (int, error) { return c.pc.WriteTo(b, a) }

// causeTally adds up the notes of many operations or probes. One goroutine
// uses it at a time; merge joins them.
type causeTally struct {
	connects int64
	n        [numCauses]int64
	added    [numCauses]time.Duration
	events   [numCauses]int64
	// slow are the successful operations that waited on a cause, for the
	// tail: how long each took and on what it waited.
	slow   []slowOp
	kernel int
	hasRTO bool
	// listenDrops is how much ListenDrops rose, when listenKnown: the
	// endpoint's listen queue was watched (listenq.go).
	listenDrops int64
	listenKnown bool
}

type slowOp struct {
	took time.Duration
	mask uint16
}

// takeOp adds n, the notes of an operation that took took and failed
// with err (nil: succeeded), and clears n for the next.
func (t *causeTally) takeOp(n *notes, took time.Duration, err error) {
	if err != nil {
		n.failed(err, took)
	}
	t.take(n, took, err == nil)
}

// take adds n, whose failure is already noted, and clears it.
func (t *causeTally) take(n *notes, took time.Duration, ok bool) {
	t.connects += int64(n.connects)
	if n.kernel != 0 && t.kernel >= 0 {
		t.kernel, t.hasRTO = n.kernel, n.hasRTO
	}
	if n.mask != 0 {
		for c := range numCauses {
			if n.mask&(1<<c) != 0 {
				t.n[c]++
				t.added[c] += n.added[c]
				t.events[c] += n.events[c]
			}
		}
		if ok {
			t.slow = append(t.slow, slowOp{took: took, mask: n.mask})
		}
	}
	n.reset()
}

func (t *causeTally) merge(o *causeTally) {
	t.connects += o.connects
	for c := range numCauses {
		t.n[c] += o.n[c]
		t.added[c] += o.added[c]
		t.events[c] += o.events[c]
	}
	t.slow = append(t.slow, o.slow...)
	if o.kernel != 0 && t.kernel >= 0 {
		t.kernel, t.hasRTO = o.kernel, o.hasRTO
	}
}

// listened reads w again and moves to listen_queue as many of the SYNs
// sent again as the listen queue dropped, with their share of the
// connects (at least one) and of the time; the successes in the tail that
// move are the first ones that waited on a SYN. Nothing moves when w is
// nil (the endpoint is not local) or cannot be read.
func (t *causeTally) listened(w *listenWatch) {
	d, ok := w.delta()
	if !ok {
		return
	}
	t.listenKnown, t.listenDrops = true, d
	syns, n := t.events[causeSYN], t.n[causeSYN]
	k := min(d, syns)
	if k <= 0 || n == 0 {
		return
	}
	moved, added := n, t.added[causeSYN]
	if k < syns {
		moved = min(max((n*k+syns/2)/syns, 1), n)
		added = added / time.Duration(n) * time.Duration(moved)
	}
	t.n[causeSYN] -= moved
	t.n[causeListen] += moved
	t.added[causeSYN] -= added
	t.added[causeListen] += added
	t.events[causeSYN] -= k
	t.events[causeListen] += k
	left := moved
	for i := range t.slow {
		if left == 0 {
			break
		}
		if m := t.slow[i].mask; m&(1<<causeSYN) != 0 {
			t.slow[i].mask = m&^(1<<causeSYN) | 1<<causeListen
			left--
		}
	}
}

// causes is the tally as Causes, with the tail of successes whose count
// and p99 are given, and where the counts came from for engine.
func (t *causeTally) causes(engine string, ok int64, p99 time.Duration, budget time.Duration) Causes {
	var cs Causes
	for c := range numCauses {
		if t.n[c] == 0 {
			continue
		}
		if cs.Connects == nil {
			cs.Connects, cs.Added, cs.Events = map[string]int64{}, map[string]time.Duration{}, map[string]int64{}
		}
		cs.Connects[causeNames[c]] = t.n[c]
		cs.Added[causeNames[c]] = t.added[c]
		cs.Events[causeNames[c]] = t.events[c]
	}
	cs.Tail = t.tail(ok, p99)
	cs.From = t.from(engine, budget)
	return cs
}

// tail names the cause that holds the p99 of ok successes: the one on
// which most of the successes at or above it waited, when that is at least
// half of the 1 % of successes there.
func (t *causeTally) tail(ok int64, p99 time.Duration) string {
	if ok == 0 || p99 <= 0 || len(t.slow) == 0 {
		return ""
	}
	var inTail [numCauses]int64
	for _, s := range t.slow {
		if float64(s.took)*1.01 < float64(p99) { // the histogram's p99 is its bucket's top
			continue
		}
		for c := range numCauses {
			if s.mask&(1<<c) != 0 {
				inTail[c]++
			}
		}
	}
	best := cause(0)
	for c := range numCauses {
		if inTail[c] > inTail[best] {
			best = c
		}
	}
	tailSize := int64(math.Ceil(float64(ok) / 100))
	if inTail[best] == 0 || 2*inTail[best] < tailSize {
		return ""
	}
	n := t.n[best]
	return fmt.Sprintf("p99 %s: %d of %d connects (%.1f %%) %s (%s)", roundDuration(p99), n, t.connects,
		100*float64(n)/float64(max(t.connects, 1)), causeWaits[best], roundDuration(t.added[best]/time.Duration(n)))
}

// from says where the counts came from.
func (t *causeTally) from(engine string, budget time.Duration) string {
	var parts []string
	switch {
	case engine != respName:
		parts = append(parts, fmt.Sprintf("engine %s: its sockets are its own, so only its errors are counted (client_budget: its client creation ran past the connection timeout, %v, to which glide adds 500 ms; classified by its typed errors); its own retries cannot be counted from outside (its statistics have no retry counter)", engine, budget))
	case t.kernel > 0 && t.hasRTO:
		parts = append(parts, fmt.Sprintf("syn_retransmit: TCP_INFO after each connect, tcpi_total_retrans and tcpi_total_rto (the kernel gave %d bytes)", t.kernel))
	case t.kernel > 0:
		parts = append(parts, fmt.Sprintf("syn_retransmit: TCP_INFO after each connect, tcpi_total_retrans only (the kernel gave %d bytes: no tcpi_total_rto, before linux 6.7)", t.kernel))
	case t.kernel < 0:
		parts = append(parts, "syn_retransmit: not counted, TCP_INFO could not be read")
	}
	switch {
	case engine != respName:
	case t.listenKnown:
		parts = append(parts, fmt.Sprintf("listen_queue: the endpoint is local and TcpExtListenDrops of this network namespace rose by %d, as many SYNs sent again attributed to it (at most those)", t.listenDrops))
	default:
		parts = append(parts, "listen_queue: not known, the endpoint is not local or TcpExtListenDrops could not be read (syn_retransmit includes a full listen queue at the server)")
	}
	if engine == respName {
		parts = append(parts, "dns_retry: the resolver's queries that timed out",
			fmt.Sprintf("tls/auth/slots_overrun: the phase ran %v or more past its round trips at the connection's RTT", overrunMin),
			fmt.Sprintf("client_budget: set-ups past Endpoint.ConnectTimeout (%v)", budget))
	}
	return strings.Join(parts, "; ")
}

// roundDuration prints d to three figures ("1.02 s", "203 ms").
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return trimFloat(d.Seconds()) + " s"
	case d >= time.Millisecond:
		return trimFloat(float64(d)/1e6) + " ms"
	}
	return trimFloat(float64(d)/1e3) + " us"
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

// mergeCauses adds a worker's tally to the run's.
func (t *tally) mergeCauses(wt *causeTally) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.causes.merge(wt)
}

// fillCauses sets the run's Causes once its workers have ended.
func (t *tally) fillCauses() {
	res := t.res
	t.causes.listened(t.listenq)
	res.Causes = t.causes.causes(res.Engine, res.Succeeded, res.Latency.P99, t.budget)
}

// noteCauses sets r.Causes from what the probe's dial noted, when anything
// waited; the notes stay for Prober.Run's tally.
func (r *ProbeResult) noteCauses(err error, budget time.Duration) {
	n := r.notes
	if err != nil {
		n.failed(err, r.Total)
	}
	if n.mask == 0 {
		return
	}
	var t causeTally
	t.connects = int64(n.connects)
	for c := range numCauses {
		if n.mask&(1<<c) != 0 {
			t.n[c], t.added[c], t.events[c] = 1, n.added[c], n.events[c]
		}
	}
	cs := t.causes(respName, 0, 0, budget)
	cs.From = ""
	r.Causes = &cs
}
