package throughput

import "time"

// pacer spreads sends evenly at a bit rate: each send of n bytes moves the
// due time of the next one by n*8/rate, and the sender sleeps only when it is
// ahead of the schedule by more than slack, so bursts stay below slack long
// (no 100 ms bursts as with iperf3's throttle timer). It is not safe for
// concurrent use.
type pacer struct {
	rate  float64 // bits per second; <= 0 means unlimited
	start time.Time
	bits  float64
	slack time.Duration
	now   func() time.Time
	sleep func(time.Duration)
}

// newPacer returns a pacer at rate from start whose sleeps end early when
// quit is closed (nil: never).
func newPacer(rate float64, start time.Time, quit <-chan struct{}) *pacer {
	sleep := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-quit:
		}
	}
	return &pacer{rate: rate, start: start, slack: 500 * time.Microsecond, now: time.Now, sleep: sleep}
}

// wait blocks until n more bytes may be sent without exceeding the rate
// (it never blocks for an unlimited pacer) and returns how far behind the
// schedule the sender is after sending them, which tells a generator that
// cannot keep up from one that is merely paced.
func (p *pacer) wait(n int) (behind time.Duration) {
	if p.rate <= 0 {
		return 0
	}
	due := p.start.Add(time.Duration(p.bits / p.rate * float64(time.Second)))
	p.bits += float64(n) * 8
	now := p.now()
	if ahead := due.Sub(now); ahead > p.slack {
		p.sleep(ahead)
		return 0
	}
	return now.Sub(due)
}
