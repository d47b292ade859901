package throughput

import (
	"encoding/json"
	"math"
	"sync"
	"syscall"
	"time"
)

// testRun holds one test's settings and measurements, shared by the client
// and the server side.
type testRun struct {
	role       string // "client" or "server"
	udp        bool
	numStreams int
	duration   time.Duration
	omit       time.Duration
	bytes      int64
	blocks     int64
	reverse    bool
	bidir      bool
	window     int
	mss        int
	congestion string
	interval   time.Duration // <= 0: no interval reports
	onInterval func(Interval)

	eng    *engine
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
	if t.role == "client" {
		return !s.send
	}
	return s.send
}

// begin starts the engine, the CPU clock and the reporter. stopRep ends the reporter.
func (t *testRun) begin() (stopRep func()) {
	t.startT = time.Now()
	t.cpuU0, t.cpuS0, t.cpuOK = processCPU()
	if !t.cpuOK {
		t.note("cpu_utilization: not available on this platform")
	}
	if !t.udp && !tcpInfoAvailable {
		t.note("tcp_info: not available on this platform")
	}
	for _, s := range t.eng.streams {
		if !s.udp && s.send {
			if ti, err := readTCPInfo(s.conn); err == nil {
				s.retransAt, s.lastRetran = ti.TotalRetrans, ti.TotalRetrans
			}
		}
	}
	if !t.udp && len(t.eng.streams) > 0 {
		if cc := tcpCongestion(t.eng.streams[0].conn); cc != "" {
			t.congestion = cc
		}
	}
	if len(t.eng.streams) > 0 {
		if sc, ok := t.eng.streams[0].conn.(syscall.Conn); ok {
			t.sndBuf, t.rcvBuf = socketBuffers(sc)
		}
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
	for {
		next := time.Duration(-1)
		if t.omit > 0 && prev < t.omit {
			next = t.omit
			if t.interval > 0 && prev+t.interval < t.omit {
				next = prev + t.interval
			}
		} else if t.interval > 0 {
			next = prev + t.interval
		}
		if next < 0 {
			<-quit
			return
		}
		timer.Reset(time.Until(t.startT.Add(next)))
		select {
		case <-quit:
			return
		case <-timer.C:
		}
		omitted := t.omit > 0 && next <= t.omit
		iv := t.cut(prev, next, omitted)
		if next == t.omit && t.omit > 0 {
			t.restartCounting(next)
		}
		prev = next
		if t.interval > 0 {
			t.emit(iv)
		}
	}
}

// emit keeps an interval report and hands it to the caller's callback.
func (t *testRun) emit(iv Interval) {
	t.mu.Lock()
	t.intervals = append(t.intervals, iv)
	t.mu.Unlock()
	if t.onInterval != nil {
		t.onInterval(iv)
	}
}

// restartCounting marks the end of the omit period.
func (t *testRun) restartCounting(at time.Duration) {
	t.mu.Lock()
	t.omitEnd = at
	t.mu.Unlock()
	for _, s := range t.eng.streams {
		s.omitSnap = s.snap()
		s.retransAt = s.lastRetran
	}
}

// cut builds the interval [from, to) from the streams' counters.
func (t *testRun) cut(from, to time.Duration, omitted bool) Interval {
	secs := (to - from).Seconds()
	iv := Interval{StartSeconds: from.Seconds(), EndSeconds: to.Seconds(), Omitted: omitted}
	for _, s := range t.eng.streams {
		now := s.snap()
		si := StreamInterval{ID: s.id, Sender: s.send, Reverse: t.streamReverse(s), Bytes: now.bytes - s.last.bytes}
		si.BitsPerSecond = bps(si.Bytes, secs)
		if !s.udp && s.send {
			if ti, err := readTCPInfo(s.conn); err == nil {
				si.TCPInfo = true
				si.Retransmits = ti.TotalRetrans - s.lastRetran
				s.lastRetran = ti.TotalRetrans
				si.SndCwndBytes, si.RTTUs, si.RTTVarUs, si.PMTU = ti.SndCwndBytes, ti.RTTUs, ti.RTTVarUs, ti.PMTU
			}
		}
		if s.udp {
			if s.send {
				si.Packets = now.packets - s.last.packets
			} else {
				si.Packets = int64(now.rx.Highest) - int64(s.last.rx.Highest)
				si.LostPackets = now.rx.Errors - s.last.rx.Errors
				si.OutOfOrder = now.rx.OutOfOrder - s.last.rx.OutOfOrder
				si.JitterMs = now.rx.Jitter * 1000
				si.LostPercent = percent(si.LostPackets, si.Packets)
			}
		}
		s.last = now
		iv.Streams = append(iv.Streams, si)
	}
	iv.Upload, iv.Download = sumInterval(iv.Streams, false, secs), sumInterval(iv.Streams, true, secs)
	return iv
}

func sumInterval(ss []StreamInterval, reverse bool, secs float64) *IntervalSum {
	var sum IntervalSum
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
		sum.JitterMs += s.JitterMs
	}
	if n == 0 {
		return nil
	}
	sum.JitterMs /= float64(n)
	sum.BitsPerSecond = bps(sum.Bytes, secs)
	sum.LostPercent = percent(sum.LostPackets, sum.Packets)
	return &sum
}

// end freezes the counters, closes the last partial interval and takes the CPU reading.
func (t *testRun) end(stopRep func(), drain bool) {
	t.endT = time.Now()
	stopRep()
	t.eng.stopSenders()
	if drain {
		t.drain()
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
	if t.interval <= 0 {
		return
	}
	el := t.endT.Sub(t.startT)
	t.mu.Lock()
	prev := time.Duration(0)
	if n := len(t.intervals); n > 0 {
		prev = time.Duration(t.intervals[n-1].EndSeconds * float64(time.Second))
	}
	t.mu.Unlock()
	// The last, partial interval is reported however short (iperf3 prints
	// such "1.00-1.00 sec" lines too), so intervals add up to the totals.
	if el > prev {
		t.emit(t.cut(prev, el, t.omit > 0 && el <= t.omit))
	}
}

// drain keeps counting received bytes until the receiving streams have
// been idle for a moment (at most half a second): when the peer decides the
// end, its last blocks are still in flight as its TEST_END arrives, and
// iperf3's own server loses them (a -n 20M test reports ~16 MB received).
func (t *testRun) drain() {
	var prev int64 = -1
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		var n int64
		for _, s := range t.eng.streams {
			if !s.send {
				n += s.bytes.Load()
			}
		}
		if n == prev {
			return
		}
		prev = n
		time.Sleep(50 * time.Millisecond)
	}
}

// countedSeconds is the measured time after the omit period.
func (t *testRun) countedSeconds() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endT.Sub(t.startT.Add(t.omitEnd)).Seconds()
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

// resultsJSON is this side's results object for EXCHANGE_RESULTS.
func (t *testRun) resultsJSON(extra func(*wireResults)) ([]byte, error) {
	anySender := false
	for _, s := range t.eng.streams {
		anySender = anySender || s.send
	}
	shr := int64(-1)
	if anySender {
		shr = 0
		if !t.udp && tcpInfoAvailable {
			shr = 1
		}
	}
	secs := t.countedSeconds()
	w := wireResults{
		CPUUtilTotal: ptrFloat(t.cpu[0]), CPUUtilUser: ptrFloat(t.cpu[1]), CPUUtilSystem: ptrFloat(t.cpu[2]),
		SenderHasRetransmits: ptrInt(shr),
		Streams:              []wireStream{},
	}
	if t.congestion != "" {
		w.CongestionUsed = t.congestion
	}
	for _, s := range t.eng.streams {
		f, o := s.final, s.omitSnap
		retr := int64(-1)
		if s.send && !s.udp && shr == 1 && s.finalInfo.OK {
			retr = s.finalInfo.TotalRetrans - s.retransAt
		}
		ws := wireStream{
			ID: ptrInt(int64(s.id)), Bytes: ptrInt(f.bytes - o.bytes), Retransmits: ptrInt(retr),
			Jitter: ptrFloat(0), Errors: ptrInt(0), Packets: ptrInt(0),
			OmittedErrors: ptrInt(0), OmittedPackets: ptrInt(0), EndTime: wireFloat(secs),
		}
		if s.udp {
			if s.send {
				ws.Packets, ws.OmittedPackets = ptrInt(f.packets), ptrInt(o.packets)
			} else {
				ws.Jitter = ptrFloat(f.rx.Jitter)
				ws.Errors, ws.OmittedErrors = ptrInt(f.rx.Errors), ptrInt(o.rx.Errors)
				ws.Packets, ws.OmittedPackets = ptrInt(int64(f.rx.Highest)), ptrInt(int64(o.rx.Highest))
				ws.OutOfOrder = ptrInt(f.rx.OutOfOrder - o.rx.OutOfOrder)
			}
		}
		w.Streams = append(w.Streams, ws)
	}
	if extra != nil {
		extra(&w)
	}
	return json.Marshal(&w)
}

// result builds the final Result from local measurements and the peer's results.
func (t *testRun) result(remote *wireResults) *Result {
	secs := t.countedSeconds()
	r := &Result{
		Role: t.role, Protocol: "tcp", StartUnix: t.startT.Unix(),
		NumStreams: t.numStreams, BlockLen: t.eng.blockLen, DurationSeconds: t.duration.Seconds(),
		OmitSeconds: t.omit.Seconds(), Bytes: t.bytes, Blocks: t.blocks, Reverse: t.reverse, Bidir: t.bidir,
		WindowBytes: t.window, MSS: t.mss, Congestion: t.congestion,
		SndBufActual: t.sndBuf, RcvBufActual: t.rcvBuf,
	}
	if t.eng.rate > 0 {
		r.BitrateBitsPerSecond = t.eng.rate
	}
	if t.udp {
		r.Protocol = "udp"
	}
	t.mu.Lock()
	r.Intervals = append([]Interval(nil), t.intervals...)
	t.mu.Unlock()
	r.CPU.HostTotal, r.CPU.HostUser, r.CPU.HostSystem = t.cpu[0], t.cpu[1], t.cpu[2]
	peer := map[int]wireStream{}
	remoteRetr := false
	if remote != nil {
		r.CPU.RemoteTotal, r.CPU.RemoteUser, r.CPU.RemoteSystem = float64(*remote.CPUUtilTotal), float64(*remote.CPUUtilUser), float64(*remote.CPUUtilSystem)
		remoteRetr = int64(*remote.SenderHasRetransmits) == 1
		r.RemoteCongestion = remote.CongestionUsed
		for _, ws := range remote.Streams {
			peer[int(*ws.ID)] = ws
		}
	}
	for _, s := range t.eng.streams {
		bytes, packets, errs, ooo := t.localCounts(s)
		sr := StreamResult{ID: s.id, Reverse: t.streamReverse(s), Seconds: secs, Retransmits: -1}
		if la, ra := s.conn.LocalAddr(), s.conn.RemoteAddr(); la != nil && ra != nil {
			sr.LocalAddr, sr.RemoteAddr = la.String(), ra.String()
		}
		ws, havePeer := peer[s.id]
		if s.send {
			sr.SentBytes = bytes
			if !s.udp && s.finalInfo.OK {
				sr.Retransmits = s.finalInfo.TotalRetrans - s.retransAt
				sr.SndCwndBytes, sr.RTTUs, sr.RTTVarUs = s.finalInfo.SndCwndBytes, s.finalInfo.RTTUs, s.finalInfo.RTTVarUs
			}
			sr.SentPackets = packets
			if havePeer {
				sr.ReceivedBytes = int64(*ws.Bytes)
				if s.udp {
					op, oe := int64(0), int64(0)
					if ws.OmittedPackets != nil {
						op, oe = int64(*ws.OmittedPackets), int64(*ws.OmittedErrors)
					}
					sr.Packets = int64(*ws.Packets) - op
					sr.LostPackets = int64(*ws.Errors) - oe
					sr.JitterMs = float64(*ws.Jitter) * 1000
					if ws.OutOfOrder != nil {
						sr.OutOfOrder = int64(*ws.OutOfOrder)
					}
				}
			}
		} else {
			sr.ReceivedBytes = bytes
			sr.Packets, sr.LostPackets, sr.OutOfOrder = packets, errs, ooo
			sr.JitterMs = s.final.rx.Jitter * 1000
			if havePeer {
				sr.SentBytes = int64(*ws.Bytes)
				if remoteRetr && !s.udp {
					sr.Retransmits = int64(*ws.Retransmits)
				}
				if s.udp {
					op := int64(0)
					if ws.OmittedPackets != nil {
						op = int64(*ws.OmittedPackets)
					}
					sr.SentPackets = int64(*ws.Packets) - op
				}
			}
		}
		sr.LostPercent = percent(sr.LostPackets, sr.Packets)
		sr.SentBitsPerSecond = bps(sr.SentBytes, secs)
		sr.ReceivedBitsPerSecond = bps(sr.ReceivedBytes, secs)
		r.Streams = append(r.Streams, sr)
	}
	r.Upload = t.summary(r.Streams, false, secs)
	r.Download = t.summary(r.Streams, true, secs)
	if t.udp {
		gso, gro := false, false
		for _, s := range t.eng.streams {
			if s.fast != nil {
				gso, gro = gso || s.fast.gso, gro || s.fast.gro
			}
		}
		switch {
		case gso && gro:
			r.UDPOffload = "gso+gro"
		case gso:
			r.UDPOffload = "gso"
		case gro:
			r.UDPOffload = "gro"
		default:
			r.UDPOffload = "none"
		}
		if !udpFastAvailable {
			t.note("udp gso/gro: not available on this platform")
		}
	}
	r.Notes = append(r.Notes, t.notes...)
	return r
}

func (t *testRun) summary(ss []StreamResult, reverse bool, secs float64) *Summary {
	var sum Summary
	for _, s := range ss {
		if s.Reverse != reverse {
			continue
		}
		sum.Streams++
		sum.SentBytes += s.SentBytes
		sum.ReceivedBytes += s.ReceivedBytes
		if s.Retransmits < 0 {
			sum.Retransmits = math.MinInt64
		} else if sum.Retransmits >= 0 {
			sum.Retransmits += s.Retransmits
		}
		sum.SentPackets += s.SentPackets
		sum.Packets += s.Packets
		sum.LostPackets += s.LostPackets
		sum.OutOfOrder += s.OutOfOrder
		sum.JitterMs += s.JitterMs
	}
	if sum.Streams == 0 {
		return nil
	}
	if sum.Retransmits < 0 {
		sum.Retransmits = -1
	}
	sum.Seconds = secs
	sum.JitterMs /= float64(sum.Streams)
	sum.LostPercent = percent(sum.LostPackets, sum.Packets)
	sum.SentBitsPerSecond = bps(sum.SentBytes, secs)
	sum.ReceivedBitsPerSecond = bps(sum.ReceivedBytes, secs)
	if t.eng.rate > 0 {
		sum.TargetBitsPerSecond = t.eng.rate * float64(sum.Streams)
		// The sender fell short of the target by more than 5%: the generator,
		// not the network, limited the test.
		sum.SenderLimited = sum.SentBitsPerSecond < 0.95*sum.TargetBitsPerSecond
	}
	return &sum
}

func bps(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * 8 / secs
}

func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
