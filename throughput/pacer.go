package throughput

import (
	"math"
	"runtime"
	"time"
)

// Pacing bounds, in time of the target rate. A receiver that reads one
// datagram at a time (iperf3's) holds about 1 ms of a 1 Gbit/s flow in its
// default 208 KiB socket buffer: anything the sender puts on the wire at
// once must stay well below that.
const (
	// maxBatchTime is the most of the target rate's data one write (a UDP
	// GSO batch) carries: at 1 Gbit/s 4 datagrams of 1400 bytes (44.8 us),
	// at 5 Gbit/s 22 (49.3 us). A datagram longer than that at the rate
	// goes alone.
	maxBatchTime = 50 * time.Microsecond
	// paceSlack is how early a send may go: waits shorter than this are
	// not worth a sleep.
	paceSlack = 5 * time.Microsecond
	// catchUp is how much faster than the target rate a late sender may
	// send to make up its debt, after an initial catchUpBurst.
	catchUp = 2
	// catchUpBurst is the most a late sender sends at once (or one write,
	// when that is larger): a thread on a loaded machine wakes up hundreds
	// of microseconds late, and a sender that may send only one write per
	// wake-up then never catches up. 32 KiB is a sixth of a default 208 KiB
	// socket buffer: one datagram at a time, a stock receiver absorbs it.
	catchUpBurst = 32 << 10
	// Below slowRate a late sender may send catchUpBurstSlow at once:
	// threads on a loaded machine wake tens of milliseconds late, and a
	// receiver that drains 100 Mbit/s one datagram at a time takes 128 KiB
	// (10 ms of it) in its stride.
	slowRate         = 100e6
	catchUpBurstSlow = 128 << 10
	// maxDebt is how far behind the schedule a stalled sender (descheduled,
	// a full socket buffer) may be, or maxDebtBytes' or four writes' time
	// at the rate when that is longer (slow rates); the rest is forgiven rather than
	// sent, and the test reports the shortfall (Summary.SenderLimited).
	maxDebt = 5 * time.Millisecond
	// maxDebtBytes is the debt kept at slow rates, where 5 ms is a datagram
	// or two: repaid at twice the rate, 256 KiB is a surge of 105 ms at
	// 20 Mbit/s, and never more than catchUpBurst at once.
	maxDebtBytes = 256 << 10
)

// pacer spreads sends evenly at a bit rate. Each send of n bytes takes the
// next slot of n*8/rate on the schedule; the sender sleeps (precisely:
// sleeper) until its slot, so a sender on time sends one write at a time.
// A late sender catches up on a second schedule at catchUp times the rate,
// after at most catchUpBurst at once, and forgives debt past maxDebt. It is
// not safe for concurrent use.
type pacer struct {
	rate  float64   // bits per second; <= 0 means unlimited
	plain bool      // no catch-up limit and no forgiveness: TCP, whose bursts the kernel paces
	next  time.Time // the next send's slot
	fast  time.Time // the next send's slot on the catch-up schedule
	now   func() time.Time
	sleep func(time.Duration)
}

// newPacer returns a pacer at rate from start that sleeps with sl.
func newPacer(rate float64, start time.Time, sl sleeper) *pacer {
	return &pacer{rate: rate, next: start, fast: start, now: time.Now, sleep: sl.sleep}
}

// wait blocks until n more bytes may be sent (it never blocks for an
// unlimited pacer) and returns the time the send goes out: at most
// paceSlack before its slot on the schedule for a sender on time, after it
// for a late one. A UDP sender stamps every datagram of the write with it.
func (p *pacer) wait(n int) time.Time {
	now := p.now()
	if p.rate <= 0 {
		return now
	}
	dur := p.dur(n)
	if p.plain {
		return p.plainWait(now, dur)
	}
	// Forgive what a surge would have to repay: debt past maxDebt, or past
	// maxDebtBytes or four writes, whichever is longer (slow rates, large
	// TCP writes).
	if debt := max(maxDebt, p.dur(maxDebtBytes), 4*dur); p.next.Before(now.Add(-debt)) {
		p.next = now.Add(-debt)
	}
	// The catch-up schedule lets catchUpBurst go at once, then catchUp
	// times the rate.
	burst := catchUpBurst
	if p.rate < slowRate {
		burst = catchUpBurstSlow
	}
	credit := max((p.dur(burst)-dur)/catchUp-paceSlack, 0)
	if n > burst {
		// A write past the burst bound (TCP's) is a burst by itself; one
		// that blocked in the kernel must not also hold up the next.
		credit = dur / catchUp
	}
	if early := now.Add(-credit); p.fast.Before(early) {
		p.fast = early
	}
	due := p.next
	if p.fast.After(due) {
		due = p.fast
	}
	if ahead := due.Sub(now); ahead > paceSlack {
		p.sleep(ahead)
		now = p.now()
	}
	p.next = p.next.Add(dur)
	p.fast = p.fast.Add(dur / catchUp)
	return now
}

// plainWait is wait for a plain pacer: it sleeps until the slot, whatever
// the debt.
func (p *pacer) plainWait(now time.Time, dur time.Duration) time.Time {
	if ahead := p.next.Sub(now); ahead > paceSlack {
		p.sleep(ahead)
		now = p.now()
	}
	p.next = p.next.Add(dur)
	return now
}

// dur is the time n bytes take at the rate.
func (p *pacer) dur(n int) time.Duration {
	return time.Duration(math.Round(float64(n) * 8 / p.rate * float64(time.Second)))
}

// sleeper sleeps for a pacer. The linux one (newSleeper) is precise to a
// few microseconds, where the Go runtime's timers round sub-millisecond
// sleeps up to a millisecond -- 1 Gbit/s would then go out in 125 KB
// bursts. Each sleep ends early when quit is closed.
type sleeper interface {
	sleep(d time.Duration)
	close()
}

// coarseSleep is the portable sleeper: the runtime's timer for the bulk
// of a wait, then a yield loop for the last coarseSpin.
type coarseSleep struct{ quit <-chan struct{} }

// coarseSpin is what the runtime's timer may overshoot by.
const coarseSpin = 1500 * time.Microsecond

func (c coarseSleep) sleep(d time.Duration) {
	end := time.Now().Add(d)
	if d > coarseSpin {
		timerSleep(d-coarseSpin, c.quit)
	}
	spinUntil(end, c.quit)
}

func (coarseSleep) close() {}

// timerSleep sleeps d on the runtime's timer, or until quit is closed.
func timerSleep(d time.Duration, quit <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-quit:
	}
}

// spinUntil yields the processor until end, or until quit is closed.
func spinUntil(end time.Time, quit <-chan struct{}) {
	for time.Now().Before(end) {
		select {
		case <-quit:
			return
		default:
		}
		runtime.Gosched()
	}
}
