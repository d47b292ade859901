package latency

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// pending is the under-load record of one message that asked for a reply. Its
// table slot is reused by the message asking for a reply 65536 requests later;
// a reply (or duplicate) that arrives after that no longer matches seq and
// counts as out of order.
type pending struct {
	seq      atomic.Uint64
	intended atomic.Int64
	sent     atomic.Int64
	own      atomic.Int64 // the sender's own lateness, not charged
	got      atomic.Bool  // a reply arrived: a second one is a duplicate
}

// loadRun is the state an under-load run shares between its sender (the
// calling goroutine) and its receiver.
type loadRun struct {
	*run
	every uint64
	table []pending
	mask  uint64
	first uint64 // sequence number of the first measured message

	senderDone atomic.Bool
	lastSend   atomic.Int64
	lastSeq    atomic.Uint64

	pongsIn int64  // pongs requested inside the window (sender only)
	gotIn   int64  // and answered (receiver only)
	highest uint64 // highest reply sequence number (receiver only)

	// rb, when set, is the transport the sender receives from itself
	// while it waits (there is no receiver goroutine then).
	rb readByer

	// The CPU time of the sender's and the receiver's threads.
	cpuSend, cpuRecv time.Duration
}

// readByer is a transport that can wait for a message until a deadline
// without an error at the deadline, and read while a write waits
// (spinTransport).
type readByer interface {
	readBy(deadline time.Time) (msg []byte, ok bool, err error)
	whileWriting(onReadable func() error)
}

// waitReceiving waits until intended (ns since base) on the sender's
// thread, handling the replies that arrive meanwhile: it sleeps in the
// kernel until spin/2 before intended, then receives without blocking until
// it. It reports false when the run was cancelled.
func (l *loadRun) waitReceiving(ctx context.Context, intended, spin int64) (bool, error) {
	r := l.run
	for i := 0; ; i++ {
		now := r.now()
		if now >= intended {
			return true, nil
		}
		if i&63 == 0 && (ctx.Err() != nil || r.cancelled.Load()) {
			return false, nil
		}
		by := now // a non-blocking receive
		if intended-now > spin {
			by = intended - spin/2
		}
		m, ok, err := l.rb.readBy(r.base.Add(time.Duration(by)))
		if err != nil {
			if r.cancelled.Load() {
				return false, nil
			}
			return false, err
		}
		if ok {
			if err := l.reply(m, time.Now(), &l.highest); err != nil {
				return false, err
			}
		}
	}
}

func (r *run) underLoad(ctx context.Context) error {
	msg := r.message()
	var seq uint64
	if err := r.warmUp(msg, &seq); err != nil {
		return err
	}
	l := &loadRun{run: r, every: uint64(r.cfg.ReplyEvery), table: make([]pending, 1<<16)}
	l.mask = uint64(len(l.table) - 1)
	r.setWindow()
	l.first = seq + 1

	var recvErr error
	var sendErr error
	var sent int64
	if rb, ok := r.tr.(readByer); ok && r.cfg.Spin == 0 {
		// One thread sends and, while it waits for each send time,
		// receives: a reply that arrives while it spins is read at once,
		// with no thread to wake. A TCP write that waits for flow
		// control reads the replies that arrive meanwhile.
		l.rb = rb
		rb.whileWriting(l.drain)
		sendErr = l.send(ctx, msg, seq)
		sent = r.now()
		l.senderDone.Store(true)
		if sendErr == nil {
			recvErr = l.receive(ctx)
		}
	} else {
		var wg sync.WaitGroup
		wg.Go(func() { recvErr = l.receive(ctx) })
		sendErr = l.send(ctx, msg, seq)
		sent = r.now()
		l.senderDone.Store(true)
		wg.Wait()
	}
	if sendErr != nil && !r.cancelled.Load() {
		return sendErr
	}
	if recvErr != nil {
		return recvErr
	}
	r.dropped = max(l.pongsIn-l.gotIn, 0)
	r.asked = int64(pongsSent(l.lastSeq.Load(), l.first, l.every))
	if r.cfg.OnMessage != nil && ctx.Err() == nil && !r.cancelled.Load() {
		l.settle()
	}
	r.res.CPU = l.cpuSend + l.cpuRecv
	r.res.targetMPS = r.cfg.MPS
	r.res.replyEvery = r.cfg.ReplyEvery
	r.res.RunTime = time.Duration(sent - r.start)
	return nil
}

// send sends messages at the configured rate until the run ends, the last
// sequence number used being seq. The intended send times come from
// Schedule's pacer, so they are fixed from the start and never burst to
// catch up; a message sent more than one interval (at most 1 ms) after its
// intended time counts as late.
func (l *loadRun) send(ctx context.Context, msg []byte, seq uint64) error {
	r := l.run
	size := uint32(len(msg))
	// The sender's thread is its own, so that its spinning and its
	// wake-ups are not shared with other goroutines.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	defer func() { l.cpuSend = threadCPU() - t0 }()
	clk, done := l.senderClock()
	defer done()
	pc := newPacer(r.start, float64(r.cfg.MPS), r.cfg.Arrival, 0)
	lateAfter := min(int64(time.Second)/int64(r.cfg.MPS), int64(maxLateAfter))
	// A UDP write never waits for the server; a TCP one may, for flow
	// control, and that wait is the server's.
	flowControl := !strings.HasPrefix(r.cfg.Network, "udp")
	var wrote int64 // when the last write returned
	var yields yielder
	for i := int64(0); ; i++ {
		if r.cfg.Count > 0 && i >= r.cfg.Count {
			return nil
		}
		intended := pc.next()
		if r.end >= 0 && intended >= r.end {
			return nil
		}
		if l.rb != nil {
			ok, err := l.waitReceiving(ctx, intended, clk.spin)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		} else if !clk.waitUntil(ctx, intended) || r.cancelled.Load() {
			return nil
		}
		seq++
		flags := wire.FlagClient
		now := r.now()
		if now-intended > lateAfter {
			r.res.Late++
		}
		if seq%l.every == 0 {
			flags |= wire.FlagPong
			// The sender never waits for a reply: its lateness is
			// its own, past the previous write's return over TCP (a
			// write held up by flow control is the server's).
			from := intended
			if flowControl {
				from = max(intended, wrote)
			}
			l.asking(seq, intended, now, max(now-from, 0))
		}
		wire.Header{Seq: seq, Flags: flags, Length: size}.Put(msg)
		if err := r.tr.write(msg); err != nil {
			return err
		}
		r.res.Sent++
		wrote = r.now()
		l.lastSeq.Store(seq)
		l.lastSend.Store(wrote)
		if l.rb != nil {
			// Preempted, the sleeping sender cost the monitor about
			// 1,300 wake-ups a second at 1000 msg/s, half the probe's
			// CPU.
			yields.at(wrote)
		}
	}
}

// senderClock returns the clock of the sender's waits, on the sender's
// locked thread, and what undoes its set-up.
func (l *loadRun) senderClock() (*realClock, func()) {
	r := l.run
	// The sender sleeps to each send by default (issue 42): a spinning one
	// takes a whole core at 1000 msg/s, half of a 2-vCPU host. Only Spin
	// makes it busy-wait the last defaultSpin of each gap, as sockperf's
	// does.
	var spin time.Duration
	if r.cfg.Spin > 0 {
		spin = defaultSpin
	}
	clk := newRealClock(r.base, spin, runtime.GOMAXPROCS(0))
	// Spin's receiver spins on a P of its own and reads its socket
	// without the poller: a sender that kept the other P would starve the
	// rest of the process, and yielding costs the replies nothing.
	clk.yield = r.cfg.Spin > 0
	restore := func() {}
	if l.rb != nil {
		// One ppoll(2) a message, to the nanosecond: the thread's timer
		// slack (50 us by default) would make every send that late.
		restore = preciseTimers()
	}
	return clk, func() { clk.timer.Stop(); restore() }
}

// asking records message seq, due at intended and sent at now (ns since
// base) own late, as asking for a reply.
func (l *loadRun) asking(seq uint64, intended, now, own int64) {
	p := &l.table[(seq/l.every)&l.mask]
	p.intended.Store(intended)
	p.got.Store(false)
	p.sent.Store(now)
	p.own.Store(own)
	p.seq.Store(seq)
	if l.run.inWindow(intended) {
		l.pongsIn++
	}
}

// drain handles the replies the transport has at hand, without waiting.
func (l *loadRun) drain() error {
	for {
		m, ok, err := l.rb.readBy(time.Time{})
		if err != nil || !ok {
			return err
		}
		if err := l.reply(m, time.Now(), &l.highest); err != nil {
			return err
		}
	}
}

// receive reads replies until the sender is done and every reply has come
// or ReadTimeout has passed since the last send, or the run is cancelled.
func (l *loadRun) receive(ctx context.Context) error {
	r := l.run
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	defer func() { l.cpuRecv = threadCPU() - t0 }()
	poll := int64(50 * time.Millisecond)
	for {
		if ctx.Err() != nil || r.cancelled.Load() {
			return nil
		}
		now := r.now()
		if l.senderDone.Load() && (now > l.lastSend.Load()+int64(r.cfg.ReadTimeout) || r.res.Received >= int64(pongsSent(l.lastSeq.Load(), l.first, l.every))) {
			return nil
		}
		m, err := r.tr.read(r.base.Add(time.Duration(now + poll)))
		if err != nil {
			if isTimeout(err) {
				continue
			}
			if r.cancelled.Load() {
				return nil
			}
			return err
		}
		if err := l.reply(m, time.Now(), &l.highest); err != nil {
			return err
		}
	}
}

// reply accounts for one received message m, read at readAt.
func (l *loadRun) reply(m []byte, readAt time.Time, highest *uint64) error {
	r := l.run
	h, err := wire.DecodeHeader(m)
	if err != nil || h.Flags&wire.FlagClient != 0 {
		r.foreign++
		return nil
	}
	if h.Seq < l.first || h.Seq%l.every != 0 {
		return nil
	}
	p := &l.table[(h.Seq/l.every)&l.mask]
	if p.seq.Load() != h.Seq {
		if h.Seq > p.seq.Load() {
			return fmt.Errorf("latency: reply with sequence number %d, which was not sent", h.Seq)
		}
		r.res.Received++
		r.ooo++ // too late to be matched any more
		return nil
	}
	r.res.Received++
	if p.got.Swap(true) {
		r.dup++
		return nil
	}
	intended, own, sent := p.intended.Load(), p.own.Load(), p.sent.Load()
	rx, wake, stamped := r.arrival(readAt, sent)
	r.report(intended, time.Duration(rx-intended-own), nil)
	in := r.inWindow(intended)
	if in {
		l.gotIn++
	}
	if h.Seq < *highest {
		r.ooo++
		return nil
	}
	*highest = h.Seq
	if in {
		r.keep(time.Duration(rx - intended - own))
		r.sendLate.Record(time.Duration(own))
		if stamped {
			r.wake.Record(wake)
		}
		if !r.cfg.DiscardSamples {
			r.raw = append(r.raw, time.Duration(rx-sent))
		}
	}
	return nil
}

// settle reports, at the run's end, the messages whose reply never came
// lost, in the order they were sent; the sender and the receiver are done.
func (l *loadRun) settle() {
	last := l.lastSeq.Load() / l.every
	for i := range uint64(len(l.table)) {
		p := &l.table[(last+1+i)&l.mask]
		if seq := p.seq.Load(); seq >= l.first && !p.got.Load() {
			l.report(p.intended.Load(), 0, errLost)
		}
	}
}

// arrival is when a reply read at readAt, to the message sent at tx (ns
// since base), reached the client's kernel (ns since base): its receive
// stamp (SO_TIMESTAMPNS), so that the reader's wake-up, which a sleeping
// sender pays on every reply, is not in the round trip (issue 42). wake is
// that wake-up; stamped is false, and rx the read, without a stamp. The
// kernel stamps on the wall clock and the run counts on the monotonic one:
// the wake-up is taken on the wall clock alone, over microseconds in which
// no slew shows, and bounded by the round trip it is part of, so that a
// clock step cannot make it negative or longer than the round trip.
func (r *run) arrival(readAt time.Time, tx int64) (rx int64, wake time.Duration, stamped bool) {
	rx = int64(readAt.Sub(r.base))
	at := r.tr.arrived()
	if at.IsZero() {
		return rx, 0, false
	}
	wake = min(max(readAt.Sub(at), 0), time.Duration(max(rx-tx, 0)))
	return rx - int64(wake), wake, true
}

// pongsSent is how many replies were asked for by messages first..last.
func pongsSent(last, first, every uint64) uint64 {
	if last < first {
		return 0
	}
	return last/every - (first-1)/every
}

// readSocketDrops reads the client socket's drop counter into the result.
