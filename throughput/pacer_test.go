package throughput

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock drives a pacer: sleeping moves the clock, nothing else does
// unless the test says so.
type fakeClock struct {
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) pacer(rate float64) *pacer {
	p := newPacer(rate, c.now, coarseSleep{})
	p.now = func() time.Time { return c.now }
	p.sleep = func(d time.Duration) { c.slept += d; c.now = c.now.Add(d) }
	return p
}

// send is one write a paced sender made.
type send struct {
	at time.Time
	n  int
}

// paceRun sends batches of k datagrams of l bytes through p for d of fake
// time, each write costing cost, and stalling once for stall at stallAt.
func paceRun(c *fakeClock, p *pacer, k, l int, d, cost, stallAt, stall time.Duration) []send {
	var out []send
	start := c.now
	stalled := false
	for c.now.Sub(start) < d {
		if !stalled && stall > 0 && c.now.Sub(start) >= stallAt {
			c.now = c.now.Add(stall)
			stalled = true
		}
		now := p.wait(k * l)
		out = append(out, send{at: now, n: k * l})
		c.now = c.now.Add(cost)
	}
	return out
}

// largestBurst is the most bytes sent at one instant.
func largestBurst(sends []send) int {
	best, cur := 0, 0
	for i, s := range sends {
		if i > 0 && s.at.Equal(sends[i-1].at) {
			cur += s.n
		} else {
			cur = s.n
		}
		best = max(best, cur)
	}
	return best
}

// mostInWindow is the most bytes sent in any window of length w.
func mostInWindow(sends []send, w time.Duration) int {
	best, sum, j := 0, 0, 0
	for i, s := range sends {
		sum += s.n
		for s.at.Sub(sends[j].at) >= w {
			sum -= sends[j].n
			j++
		}
		_ = i
		best = max(best, sum)
	}
	return best
}

func TestPacerLargestBurst(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		batch     int // datagrams of 1400 bytes per write
		wantBurst int
	}{
		{1e9, 4, 5600},   // 44.8 us of 1 Gbit/s
		{5e9, 22, 30800}, // 49.3 us of 5 Gbit/s
	} {
		e := &engine{cfg: &Config{BlockLen: 1400, Bitrate: tc.rate}}
		require.Equal(t, tc.batch, e.gsoBatch())
		bound := int(tc.rate * maxBatchTime.Seconds() / 8)
		for _, cost := range []time.Duration{0, 3 * time.Microsecond} {
			c := &fakeClock{now: time.Unix(1000, 0)}
			p := c.pacer(tc.rate)
			sends := paceRun(c, p, tc.batch, 1400, 200*time.Millisecond, cost, 0, 0)
			burst := largestBurst(sends)
			t.Logf("rate %.0f cost %v: largest burst %d bytes (bound %d), most in 100 us %d", tc.rate, cost, burst, bound, mostInWindow(sends, 100*time.Microsecond))
			assert.Equal(t, tc.wantBurst, burst)
			assert.LessOrEqual(t, burst, bound)
			// Any 100 us carries the rate's 100 us plus at most one batch.
			assert.LessOrEqual(t, mostInWindow(sends, 100*time.Microsecond), int(tc.rate*100e-6/8)+tc.wantBurst)
			// And the average is the rate: 200 ms of it, give or take the
			// batches on either side of the run's end.
			total := 0
			for _, s := range sends {
				total += s.n
			}
			assert.InDelta(t, tc.rate*0.2/8, total, 2*float64(tc.wantBurst))
		}
	}
}

// TestPacerStall checks how a sender that stalls for 20 ms catches up:
// at most catchUpBurst at once, then at most catchUp times the rate, and
// the debt past maxDebt forgiven.
func TestPacerStall(t *testing.T) {
	const rate, k, l = 1e9, 4, 1400
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(rate)
	sends := paceRun(c, p, k, l, 100*time.Millisecond, 0, 10*time.Millisecond, 20*time.Millisecond)
	burst := largestBurst(sends)
	t.Logf("largest burst after the stall: %d bytes", burst)
	assert.LessOrEqual(t, burst, catchUpBurst)
	assert.Greater(t, burst, catchUpBurst-k*l)
	w := 1 * time.Millisecond
	assert.LessOrEqual(t, mostInWindow(sends, w), int(catchUp*rate*w.Seconds()/8)+catchUpBurst)
	assert.Greater(t, mostInWindow(sends, w), int(1.5*rate*w.Seconds()/8), "it does catch up")
	total := 0
	for _, s := range sends {
		total += s.n
	}
	// 100 ms of sending, less the 15 ms of the stall that was forgiven.
	want := rate * (0.100 - 0.020 + maxDebt.Seconds()) / 8
	assert.InDelta(t, want, total, 4*k*l)
}

func TestPacerSendTimes(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(8e6) // 1 MB/s: 1000 bytes take 1 ms
	for range 1000 {
		p.wait(1000)
	}
	assert.Equal(t, 999*time.Millisecond, c.slept, "1000 sends of 1000 bytes: the last goes at 999 ms")
	start := c.now
	assert.Equal(t, start.Add(time.Millisecond), p.wait(4000), "a sender on time goes at its slot")
	// A late sender goes when it can: the time it returns is the clock's.
	c.now = c.now.Add(10 * time.Millisecond)
	assert.Equal(t, c.now, p.wait(2000))
	// Unlimited never waits.
	u := c.pacer(0)
	u.sleep = func(time.Duration) { t.Fatal("slept") }
	assert.Equal(t, c.now, u.wait(1<<20))
}

// TestSleepers checks that both sleepers sleep at least as asked and end
// early once quit is closed.
func TestSleepers(t *testing.T) {
	quit := make(chan struct{})
	for name, mk := range map[string]func() sleeper{
		"coarse":   func() sleeper { return coarseSleep{quit: quit} },
		"platform": func() sleeper { return newSleeper(quit) },
	} {
		sl := mk()
		for _, d := range []time.Duration{20 * time.Microsecond, 300 * time.Microsecond, 4 * time.Millisecond} {
			t0 := time.Now()
			sl.sleep(d)
			assert.GreaterOrEqual(t, time.Since(t0), d, "%s %v", name, d)
		}
		sl.close()
	}
	close(quit)
	for name, sl := range map[string]sleeper{"coarse": coarseSleep{quit: quit}, "platform": newSleeper(quit)} {
		t0 := time.Now()
		sl.sleep(time.Hour)
		sl.close()
		assert.Less(t, time.Since(t0), 5*time.Second, "%s ends when quit is closed", name)
	}
}

// TestPacerLateWakeups has every sleep overrun by 1.5 times a send's time,
// as threads on a loaded machine wake late: the sender must still keep the
// rate on average.
func TestPacerLateWakeups(t *testing.T) {
	const rate, l = 10e6, 1200 // 960 us a datagram
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(rate)
	over := p.dur(l) * 3 / 2
	p.sleep = func(d time.Duration) { c.now = c.now.Add(d + over) }
	start := c.now
	n := 0
	for c.now.Sub(start) < time.Second {
		p.wait(l)
		n++
	}
	got := float64(n*l*8) / c.now.Sub(start).Seconds()
	assert.InEpsilon(t, rate, got, 0.02, "sent %.0f bit/s", got)
}

// TestPacerSlowWrites has each 128 KiB write at 100 Mbit/s (10.5 ms of
// the rate) block for 20 ms every other write, as a TCP write into a full socket buffer
// does: the sender must keep the rate, not forgive every write's lateness.
func TestPacerSlowWrites(t *testing.T) {
	const rate, n = 100e6, 128 << 10
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(rate)
	start := c.now
	sent := 0
	for i := 0; c.now.Sub(start) < time.Second; i++ {
		p.wait(n)
		sent += n
		if i%2 == 0 {
			c.now = c.now.Add(20 * time.Millisecond)
		}
	}
	got := float64(sent*8) / c.now.Sub(start).Seconds()
	assert.InEpsilon(t, rate, got, 0.05, "sent %.0f bit/s", got)
}

// TestPacerLoadedSlowRate wakes the sender 30 ms late after every sleep,
// as a loaded 2-core machine does: at 20 Mbit/s it must still keep the
// rate, sending at most catchUpBurstSlow at once.
func TestPacerLoadedSlowRate(t *testing.T) {
	const rate, l = 20e6, 1460
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(rate)
	p.sleep = func(d time.Duration) { c.now = c.now.Add(d + 30*time.Millisecond) }
	start := c.now
	var sends []send
	for c.now.Sub(start) < 2*time.Second {
		now := p.wait(l)
		sends = append(sends, send{at: now, n: l})
	}
	got := float64(len(sends)*l*8) / c.now.Sub(start).Seconds()
	assert.InEpsilon(t, rate, got, 0.05, "sent %.0f bit/s", got)
	assert.LessOrEqual(t, largestBurst(sends), catchUpBurstSlow)
}

// TestPacerPlain checks the TCP pacer: a sender 50 ms late sends at once
// until it has caught up, and then keeps the schedule.
func TestPacerPlain(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(8e6) // 1000 bytes a millisecond
	p.plain = true
	p.wait(1000)
	c.now = c.now.Add(50 * time.Millisecond)
	for range 50 {
		p.wait(1000)
	}
	assert.Zero(t, c.slept, "50 ms of debt is repaid without sleeping")
	p.wait(1000)
	assert.Equal(t, time.Millisecond, c.slept, "then back on the schedule")
}
