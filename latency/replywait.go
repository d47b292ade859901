package latency

import (
	"fmt"
	"math/bits"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// defaultMinReadTimeout is the floor of the adaptive reply timeout.
const defaultMinReadTimeout = 10 * time.Millisecond

// rto is TCP's retransmission timeout (RFC 6298) over a ping-pong run's round
// trips: srtt + 4·rttvar, at least floor, doubled after each timeout until
// the next round trip, at most ceil, and ceil before the first round trip.
// The zero value (with floor and ceil set) has seen no round trip.
type rto struct {
	srtt, rttvar time.Duration
	shift        uint // timeouts since the last round trip
	seen         bool
	floor, ceil  time.Duration
}

// sample takes one measured round trip.
func (e *rto) sample(d time.Duration) {
	if !e.seen {
		e.srtt, e.rttvar, e.seen = d, d/2, true
	} else {
		e.rttvar = (3*e.rttvar + (e.srtt - d).Abs()) / 4
		e.srtt = (7*e.srtt + d) / 8
	}
	e.shift = 0
}

// backoff doubles the timeout after a reply did not come in time.
func (e *rto) backoff() { e.shift = min(e.shift+1, 62) }

// timeout is how long the next reply is awaited.
func (e *rto) timeout() time.Duration {
	if !e.seen {
		return e.ceil
	}
	t := max(e.srtt+4*e.rttvar, e.floor)
	if t > e.ceil>>e.shift {
		return e.ceil
	}
	return min(t<<e.shift, e.ceil)
}

// replyState is where a ping-pong message stands. The zero value is a ring
// slot no message used yet.
type replyState uint8

const (
	unused   replyState = iota
	awaited             // the current message: its reply is awaited
	overdue             // its timeout passed: dropped unless a late reply comes
	lost                // its timeout passed, and no late reply is awaited
	answered            // a reply came: another one is a duplicate
)

// replyKind is what a received message was to a ping-pong run.
type replyKind uint8

const (
	replyOnTime  replyKind = iota // a reply, or a duplicate or stale one
	replyLate                     // the late reply of an overdue message
	replyForeign                  // not a sockperf reply
)

// sentMsg is what a ping-pong run remembers of a message it sent, so that a
// reply is matched to its own message by sequence number, even after the
// message's timeout.
type sentMsg struct {
	seq   uint64
	tx    int64 // send time, ns since the run's base
	in    bool  // sent inside the measurement window
	state replyState
	slot  int    // index of its place in run.samples while overdue, or -1
	txID  uint32 // its kernel transmit stamp's key, when hasTX
	hasTX bool
}

// maxSentRing is how many recent messages a ping-pong run remembers at most
// (a counted run remembers its Count, rounded up to a power of two); a reply
// to an older one counts as out of order.
const maxSentRing = 4096

// waiter is the receiving side of a ping-pong run: it awaits each reply
// with a fixed or adaptive timeout and accounts for every reply that comes.
type waiter struct {
	r        *run
	adaptive bool
	rto      rto
	ring     []sentMsg // by sequence number & mask
	mask     uint64
}

func newWaiter(r *run) *waiter {
	n := maxSentRing
	if r.cfg.Count > 0 && r.cfg.Count < maxSentRing {
		n = 1 << bits.Len64(uint64(r.cfg.Count-1))
	}
	return &waiter{r: r, adaptive: r.cfg.AdaptiveTimeout,
		rto:  rto{floor: r.cfg.MinReadTimeout, ceil: r.cfg.ReadTimeout},
		ring: make([]sentMsg, n), mask: uint64(n - 1)}
}

// timeout is how long the next reply is awaited.
func (w *waiter) timeout() time.Duration {
	if !w.adaptive {
		return w.r.cfg.ReadTimeout
	}
	return w.rto.timeout()
}

// await remembers message seq, sent at tx, and reads replies until its own
// arrives or its timeout passes. id is its transmit stamp's key, when
// hasID. It reports whether the run was cancelled.
func (w *waiter) await(seq uint64, tx int64, id uint32, hasID bool) (cancelled bool, err error) {
	r := w.r
	m := &w.ring[seq&w.mask]
	if m.state == overdue {
		w.lose(m) // too old to be remembered: its late reply can no longer be told
	}
	*m = sentMsg{seq: seq, tx: tx, in: r.inWindow(tx), state: awaited, slot: -1, txID: id, hasTX: hasID}
	deadline := r.base.Add(time.Duration(tx) + w.timeout())
	for m.state == awaited {
		b, err := r.tr.read(deadline)
		switch {
		case err == nil:
		case isTimeout(err):
			w.expire(m)
			return false, nil
		case r.cancelled.Load():
			return true, nil
		default:
			return false, err
		}
		kind, err := w.reply(b, r.now(), seq)
		if err != nil {
			return false, err
		}
		if kind == replyForeign && r.res.Received == 0 {
			// Nothing the server sent so far was a reply (an echo
			// server's, say): waiting out every message's timeout
			// would not change that.
			w.expire(m)
			return false, nil
		}
	}
	return false, nil
}

// expire marks m, whose timeout passed, dropped until a late reply comes,
// and keeps its place in the samples for that reply.
func (w *waiter) expire(m *sentMsg) {
	r := w.r
	m.state = overdue
	w.rto.backoff()
	if !w.adaptive {
		w.lose(m) // a reply after the timeout is not taken
	}
	if !m.in {
		return
	}
	r.dropped++
	if w.adaptive && !r.cfg.DiscardSamples {
		m.slot = len(r.samples)
		r.samples = append(r.samples, -1)
		r.k.keep(-1, m.slot, true)
	}
}

// lose reports the overdue message m lost: no reply to it will be taken.
func (w *waiter) lose(m *sentMsg) {
	m.state = lost
	w.r.report(m.tx, 0, errLost)
}

// reply accounts for one received message b, received at rx, the newest
// message sent being last, and says what it was.
func (w *waiter) reply(b []byte, rx int64, last uint64) (replyKind, error) {
	r := w.r
	h, err := wire.DecodeHeader(b)
	if err != nil || h.Flags&wire.FlagClient != 0 {
		r.foreign++
		return replyForeign, nil
	}
	r.res.Received++
	if h.Seq > last {
		return replyOnTime, fmt.Errorf("latency: reply with sequence number %d, beyond the last sent (%d)", h.Seq, last)
	}
	m := &w.ring[h.Seq&w.mask]
	switch {
	case m.seq != h.Seq || m.state == unused:
		r.ooo++ // too old to be remembered
	case m.state == answered:
		r.dup++
	case m.state == awaited:
		m.state = answered
		d := time.Duration(rx - m.tx)
		w.rto.sample(d)
		r.report(m.tx, d, nil)
		if m.in {
			r.keep(d)
			r.woke(rx, m.tx)
			r.k.keep(r.k.rtt(m.txID, m.hasTX, r.tr.arrived()), len(r.samples)-1, !r.cfg.DiscardSamples)
		}
	case m.state == overdue && rx-m.tx <= int64(r.cfg.ReadTimeout):
		m.state = answered
		w.late(m, time.Duration(rx-m.tx))
		return replyLate, nil
	default:
		if m.state == overdue {
			w.lose(m)
		}
		m.state = answered
		r.ooo++ // after ReadTimeout: the message stays dropped
	}
	return replyOnTime, nil
}

// late records the round trip d of the overdue message m, which is no longer
// dropped.
func (w *waiter) late(m *sentMsg, d time.Duration) {
	r := w.r
	w.rto.sample(d)
	r.report(m.tx, d, nil)
	if !m.in {
		return
	}
	r.dropped--
	r.late++
	r.rec.Record(d)
	if m.slot >= 0 {
		r.samples[m.slot] = d
	}
	r.k.keep(r.k.rtt(m.txID, m.hasTX, r.tr.arrived()), m.slot, m.slot >= 0)
}

// drain waits, after the last message (last), for the late replies of
// messages still overdue, until the newest of them has had its ReadTimeout:
// a message is lost only when its reply is later than that, at the end of a
// run as in its course (one more adaptive timeout alone dropped a reply that
// a loaded machine or a slow path held back past it).
func (w *waiter) drain(last uint64) error {
	r := w.r
	if !w.adaptive {
		return nil
	}
	now := r.now()
	pending, newest := 0, int64(0)
	for i := range w.ring {
		if m := &w.ring[i]; m.state == overdue && now-m.tx < int64(r.cfg.ReadTimeout) {
			pending++
			newest = max(newest, m.tx)
		}
	}
	deadline := r.base.Add(time.Duration(newest) + r.cfg.ReadTimeout)
	for pending > 0 {
		b, err := r.tr.read(deadline)
		if err != nil {
			if isTimeout(err) || r.cancelled.Load() {
				return nil
			}
			return err
		}
		kind, err := w.reply(b, r.now(), last)
		if err != nil {
			return err
		}
		if kind == replyLate {
			pending--
		}
	}
	return nil
}

// abandon gives up, at now, on the overdue messages of a run that its
// context ended: those whose ReadTimeout had passed stay dropped, the others
// could still have been answered, so they are neither dropped nor recorded.
func (w *waiter) abandon(now int64) {
	if !w.adaptive {
		return // a message is overdue only once its ReadTimeout has passed
	}
	for i := range w.ring {
		m := &w.ring[i]
		if m.state != overdue || now-m.tx >= int64(w.r.cfg.ReadTimeout) {
			continue
		}
		m.state = unused
		if m.in {
			w.r.dropped-- // its place in the samples is left empty
		}
	}
}

// settle reports, at the run's end, the messages still overdue lost, in
// the order they were sent (the newest being last).
func (w *waiter) settle(last uint64) {
	for i := range w.ring {
		if m := &w.ring[(last+1+uint64(i))&w.mask]; m.state == overdue {
			w.lose(m)
		}
	}
}
