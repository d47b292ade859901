package throughput

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"
)

// testRun is one test's measurements, on either side. Its settings are the
// engine's cfg; it only adds what the run observes.
type testRun struct {
	server     bool
	cfg        *Config
	eng        *engine
	congestion string // the algorithm the local streams use, once known

	startT time.Time
	endT   time.Time

	cpuU0, cpuS0 time.Duration
	cpuOK        bool
	cpu          [3]float64 // total, user, system percent

	mu        sync.Mutex
	intervals []Interval
	omitEnd   time.Duration // when counting restarted (0 if no omit)

	notes []string

	sndBuf, rcvBuf int // actual socket buffers of the first stream

	// The loss ledger's host readings (UDP): at the start, and the change
	// over the test once it ended; localIP is the control connection's
	// local address, for a stream bound to the unspecified one.
	hostAt   hostSample
	counters *hostCounters
	localIP  net.IP

	onStart    func() // called by begin once the start is known, before any interval
	onInterval func(Interval)

	// limit, when set (a server's MaxTotalBitrate), takes every interval
	// the reporter cuts while the test runs and ends the test (through the
	// engine's failure) when the window's average goes above it.
	limit *rateWindow
}

func newTestRun(cfg *Config, server bool) *testRun {
	t := &testRun{server: server, cfg: cfg, eng: newEngine(cfg, !server), congestion: cfg.Congestion}
	t.eng.client = !server
	if a := cfg.ServerAffinity; server && a != nil {
		if affinityAvailable {
			t.eng.cpu = *a
		} else {
			t.note("server_affinity: not available on this platform")
		}
	}
	return t
}

func (t *testRun) note(s string) {
	for _, n := range t.notes {
		if n == s {
			return
		}
	}
	t.notes = append(t.notes, s)
}

// streamReverse reports whether data on s flows server to client.
func (t *testRun) streamReverse(s *flowStream) bool {
	return s.send == t.server
}

// begin starts the engine, the CPU clock and the reporter. stopRep ends the reporter.
func (t *testRun) begin() (stopRep func()) {
	t.ledgerBegin() // before the clock starts: its reads take a few milliseconds
	t.startT = time.Now()
	t.cpuU0, t.cpuS0, t.cpuOK = processCPU()
	if !t.cpuOK {
		t.note("cpu_utilization: not available on this platform")
	}
	if !t.cfg.UDP && !tcpInfoAvailable {
		t.note("tcp_info: not available on this platform")
	}
	for _, s := range t.eng.streams {
		if !s.udp && s.send {
			if ti, err := readTCPInfo(s.conn); err == nil {
				s.retransAt, s.lastRetran = ti.TotalRetrans, ti.TotalRetrans
				s.limAt, s.limLast = ti.lim, ti.lim
			}
		}
	}
	if !t.cfg.UDP && len(t.eng.streams) > 0 {
		if cc := tcpCongestion(t.eng.streams[0].conn); cc != "" {
			t.congestion = cc
		}
	}
	if len(t.eng.streams) > 0 {
		if sc, ok := t.eng.streams[0].conn.(syscall.Conn); ok {
			t.sndBuf, t.rcvBuf = socketBuffers(sc)
		}
	}
	if t.onStart != nil {
		t.onStart()
	}
	t.eng.start()
	quit := make(chan struct{})
	done := make(chan struct{})
	go t.report(quit, done)
	return func() {
		close(quit)
		<-done
	}
}

// report emits interval reports until quit, cutting an interval at the end
// of the omit period so omitted and counted bytes never share an interval.
func (t *testRun) report(quit, done chan struct{}) {
	defer close(done)
	prev := time.Duration(0)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	planned := time.Duration(-1) // when a timed test ends
	if t.cfg.Duration > 0 {
		planned = t.cfg.Omit + t.cfg.Duration
	}
	for {
		next := time.Duration(-1)
		if t.cfg.Omit > 0 && prev < t.cfg.Omit {
			next = t.cfg.Omit
			if t.cfg.Interval > 0 && prev+t.cfg.Interval < t.cfg.Omit {
				next = prev + t.cfg.Interval
			}
		} else if t.cfg.Interval > 0 {
			next = prev + t.cfg.Interval
		}
		if next < 0 {
			<-quit
			return
		}
		// The interval that reaches the test's end is end's to cut, once
		// the senders have stopped: cut here on time, it would leave the
		// blocks written in between for a "2.00-2.00 sec" line of their
		// own. Only a test that runs on past its end by a tenth of an
		// interval gets it cut here, where it is.
		fire, to := next, next
		if planned > 0 && next >= planned && next > t.cfg.Omit {
			fire = next + t.cfg.Interval/10
		}
		timer.Reset(time.Until(t.startT.Add(fire)))
		select {
		case <-quit:
			return
		case <-timer.C:
		}
		if fire != next {
			to = time.Since(t.startT)
		}
		omitted := t.cfg.Omit > 0 && next <= t.cfg.Omit
		iv := t.cut(prev, to, omitted)
		t.police(&iv)
		if next == t.cfg.Omit && t.cfg.Omit > 0 {
			t.restartCounting(next)
		}
		prev = to
		if t.cfg.Interval > 0 {
			t.emit(iv)
		}
	}
}

// police feeds an interval to the total rate limit, if any, and ends the
// test when it is exceeded.
func (t *testRun) police(iv *Interval) {
	if t.limit == nil {
		return
	}
	if err := t.limit.add(ivTotalBytes(iv), iv.End-iv.Start); err != nil {
		t.eng.finish(err)
	}
}

// emit keeps an interval report and hands it to the caller's callback.
func (t *testRun) emit(iv Interval) {
	t.mu.Lock()
	t.intervals = append(t.intervals, iv)
	t.mu.Unlock()
	if t.cfg.OnInterval != nil {
		t.cfg.OnInterval(iv)
	}
	if t.onInterval != nil {
		t.onInterval(iv)
	}
}

// restartCounting marks the end of the omit period, at the counters the
// interval just cut there ended with (a fresh snapshot would leave out of the
// totals what arrived in between, yet count it in the next interval).
func (t *testRun) restartCounting(at time.Duration) {
	t.mu.Lock()
	t.omitEnd = at
	t.mu.Unlock()
	for _, s := range t.eng.streams {
		s.omitSnap = s.last
		s.retransAt = s.lastRetran
		s.limAt = s.limLast
		if s.udp && !s.send {
			s.mu.Lock()
			s.rstats.restartJitter()
			s.mu.Unlock()
		}
	}
}

// cut builds the interval [from, to) from the streams' counters.
func (t *testRun) cut(from, to time.Duration, omitted bool) Interval {
	secs := (to - from).Seconds()
	iv := Interval{Start: from, End: to, Omitted: omitted}
	for _, s := range t.eng.streams {
		now := s.snap()
		si := StreamInterval{ID: s.id, Sender: s.send, Reverse: t.streamReverse(s)}
		si.Bytes = now.bytes - s.last.bytes
		si.BitsPerSecond = bps(si.Bytes, secs)
		if !s.udp && s.send {
			if ti, err := readTCPInfo(s.conn); err == nil {
				si.TCP = ti.public()
				si.Retransmits = ti.TotalRetrans - s.lastRetran
				s.lastRetran = ti.TotalRetrans
				si.Limits = limitsBetween(s.limLast, ti.lim)
				s.limLast = ti.lim
			}
		}
		if s.udp {
			if s.send {
				si.Packets = now.packets - s.last.packets
				si.LocalDrops = now.localDrops - s.last.localDrops
				si.LocalRetries = now.localRetry - s.last.localRetry
			} else {
				si.Packets = int64(now.rx.Highest) - int64(s.last.rx.Highest)
				si.LostPackets = now.rx.Errors - s.last.rx.Errors
				si.OutOfOrder = now.rx.OutOfOrder - s.last.rx.OutOfOrder
				si.Jitter = seconds(now.rx.Jitter)
				si.LostPercent = percent(si.LostPackets, si.Packets)
			}
		}
		s.last = now
		iv.Streams = append(iv.Streams, si)
	}
	iv.Upload, iv.Download = sumInterval(iv.Streams, false, secs), sumInterval(iv.Streams, true, secs)
	return iv
}

func sumInterval(ss []StreamInterval, reverse bool, secs float64) *Counts {
	var sum Counts
	n := 0
	for _, s := range ss {
		if s.Reverse != reverse {
			continue
		}
		n++
		sum.Bytes += s.Bytes
		sum.Retransmits += s.Retransmits
		sum.Packets += s.Packets
		sum.LostPackets += s.LostPackets
		sum.OutOfOrder += s.OutOfOrder
		sum.Jitter += s.Jitter
		sum.LocalDrops += s.LocalDrops
		sum.LocalRetries += s.LocalRetries
	}
	if n == 0 {
		return nil
	}
	sum.Jitter /= time.Duration(n)
	sum.BitsPerSecond = bps(sum.Bytes, secs)
	sum.LostPercent = percent(sum.LostPackets, sum.Packets)
	return &sum
}

// seconds converts a float of seconds (iperf3's jitter) to a Duration.
func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// end freezes the counters, closes the last partial interval and takes the CPU reading.
func (t *testRun) end(ctx context.Context, stopRep func(), drain bool) {
	stopRep() // first: a late cut of the reporter's may not pass endT
	t.endT = time.Now()
	t.eng.stopSenders()
	t.eng.endLowat()
	if drain {
		t.drain(ctx)
	}
	t.eng.freeze()
	if u, s, ok := processCPU(); ok && t.cpuOK {
		wall := t.endT.Sub(t.startT).Seconds()
		if wall > 0 {
			t.cpu[1] = 100 * (u - t.cpuU0).Seconds() / wall
			t.cpu[2] = 100 * (s - t.cpuS0).Seconds() / wall
			t.cpu[0] = t.cpu[1] + t.cpu[2]
		}
	}
	if t.cfg.Interval <= 0 {
		return
	}
	el := t.endT.Sub(t.startT)
	t.mu.Lock()
	prev := time.Duration(0)
	if n := len(t.intervals); n > 0 {
		prev = t.intervals[n-1].End
	}
	t.mu.Unlock()
	// The last, partial interval is reported however short (iperf3 prints
	// such "1.00-1.00 sec" lines too), so intervals add up to the totals.
	if el > prev {
		t.emit(t.cut(prev, el, t.cfg.Omit > 0 && el <= t.cfg.Omit))
	}
}

// drain keeps counting received bytes until the receiving streams have
// been idle for a moment (at most half a second): when the peer decides the
// end, its last blocks are still in flight as its TEST_END arrives, and
// iperf3's own server loses them (a -n 20M test reports ~16 MB received).
// A stream writing to its sink (Config.ReceiveTo) is not idle, and with
// sinks the wait is bounded by IOTimeout instead: a sink that stalls for a
// moment (a file system's flush) must not lose the data behind it.
func (t *testRun) drain(ctx context.Context) {
	var prev int64 = -1
	limit := 500 * time.Millisecond
	if t.cfg.ReceiveTo != nil {
		limit = max(limit, t.cfg.IOTimeout)
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var n int64
		busy := false
		for _, s := range t.eng.streams {
			if !s.send {
				n += s.bytes.Load()
				busy = busy || s.sinking.Load()
			}
		}
		if n == prev && !busy {
			return
		}
		prev = n
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// counted is the measured time after the omit period (0 before the end).
func (t *testRun) counted() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.endT.IsZero() {
		return 0
	}
	return t.endT.Sub(t.startT.Add(t.omitEnd))
}

// localRefused returns the datagrams a sending UDP stream's host refused
// after the omit period: dropped, and offered again.
func (t *testRun) localRefused(s *flowStream) (drops, retries int64) {
	f, o := s.final, s.omitSnap
	return f.localDrops - o.localDrops, f.localRetry - o.localRetry
}

// localCounts returns a stream's counted (post-omit) figures.
func (t *testRun) localCounts(s *flowStream) (bytes, packets, errors, ooo int64) {
	f, o := s.final, s.omitSnap
	bytes = f.bytes - o.bytes
	if s.udp && s.send {
		packets = f.packets - o.packets
	}
	if s.udp && !s.send {
		packets = int64(f.rx.Highest) - int64(o.rx.Highest)
		errors = f.rx.Errors - o.rx.Errors
		ooo = f.rx.OutOfOrder - o.rx.OutOfOrder
	}
	return
}
