package throughput

import (
	"encoding/json"
	"math"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// resultsJSON is this side's results object for EXCHANGE_RESULTS.
func (t *testRun) resultsJSON(extra func(*iperfwire.Results)) ([]byte, error) {
	anySender := false
	for _, s := range t.eng.streams {
		anySender = anySender || s.send
	}
	shr := int64(-1)
	if anySender {
		shr = 0
		if !t.cfg.UDP && tcpInfoAvailable {
			shr = 1
		}
	}
	w := iperfwire.Results{
		CPUUtilTotal: iperfwire.PtrFloat(t.cpu[0]), CPUUtilUser: iperfwire.PtrFloat(t.cpu[1]),
		CPUUtilSystem: iperfwire.PtrFloat(t.cpu[2]), SenderHasRetransmits: iperfwire.PtrInt(shr),
		CongestionUsed: t.congestion, Streams: []iperfwire.Stream{},
	}
	for _, s := range t.eng.streams {
		w.Streams = append(w.Streams, t.wireStream(s, shr == 1))
	}
	w.LossCounters = t.lossCounters()
	if extra != nil {
		extra(&w)
	}
	return json.Marshal(&w)
}

// wireStream is one stream's entry in this side's results object.
func (t *testRun) wireStream(s *flowStream, retrKnown bool) iperfwire.Stream {
	f, o := s.final, s.omitSnap
	retr := int64(-1)
	if s.send && !s.udp && retrKnown && s.finalInfo.OK {
		retr = s.finalInfo.TotalRetrans - s.retransAt
	}
	ip, fp := iperfwire.PtrInt, iperfwire.PtrFloat
	ws := iperfwire.Stream{
		ID: ip(int64(s.id)), Bytes: ip(f.bytes - o.bytes), Retransmits: ip(retr),
		Jitter: fp(0), Errors: ip(0), Packets: ip(0),
		OmittedErrors: ip(0), OmittedPackets: ip(0), EndTime: iperfwire.Float(t.counted().Seconds()),
	}
	if s.send && !s.udp {
		ws.TCPLimits = encodeLimits(limitsBetween(s.limAt, s.finalInfo.lim))
	}
	switch {
	case s.udp && s.send:
		ws.Packets, ws.OmittedPackets = ip(f.packets), ip(o.packets)
		// The peer of a reverse test learns of this host's refusals only
		// from these (issue 24: where a datagram died).
		drops, retries := t.localRefused(s)
		if drops > 0 {
			ws.LocalDrops = ip(drops)
		}
		if retries > 0 {
			ws.LocalRetries = ip(retries)
		}
	case s.udp:
		ws.Jitter = fp(f.rx.Jitter)
		ws.Errors, ws.OmittedErrors = ip(f.rx.Errors), ip(o.rx.Errors)
		ws.Packets, ws.OmittedPackets = ip(int64(f.rx.Highest)), ip(int64(o.rx.Highest))
		ws.OutOfOrder = ip(f.rx.OutOfOrder - o.rx.OutOfOrder)
		ws.LossLedger = t.encodeRecvLedger(s)
	}
	return ws
}

// result builds the Result from local measurements and the peer's results
// (nil when the test ended before they were exchanged).
func (t *testRun) result(remote *iperfwire.Results) *Result {
	r := &Result{Role: role(t.server), Config: withoutHooks(t.cfg), Start: t.startT, Congestion: t.congestion,
		SndBufActual: t.sndBuf, RcvBufActual: t.rcvBuf}
	t.mu.Lock()
	r.Intervals = append([]Interval(nil), t.intervals...)
	t.mu.Unlock()
	r.CPU.HostTotal, r.CPU.HostUser, r.CPU.HostSystem = t.cpu[0], t.cpu[1], t.cpu[2]
	peer := map[int]iperfwire.Stream{}
	remoteRetr := false
	if remote != nil {
		r.CPU.RemoteTotal, r.CPU.RemoteUser, r.CPU.RemoteSystem = float64(*remote.CPUUtilTotal), float64(*remote.CPUUtilUser), float64(*remote.CPUUtilSystem)
		remoteRetr = int64(*remote.SenderHasRetransmits) == 1
		r.RemoteCongestion = remote.CongestionUsed
		for _, ws := range remote.Streams {
			peer[int(*ws.ID)] = ws
		}
	}
	d := t.counted()
	for _, s := range t.eng.streams {
		ws, ok := peer[s.id]
		var wp *iperfwire.Stream
		if ok {
			wp = &ws
		}
		r.Streams = append(r.Streams, t.streamResult(s, wp, remoteRetr, d))
	}
	r.Upload = t.summary(r.Streams, false, d)
	r.Download = t.summary(r.Streams, true, d)
	if t.cfg.UDP && remote != nil {
		for _, sum := range []*Summary{r.Upload, r.Download} {
			if sum != nil {
				sum.Ledger = t.directionLedger(sum == r.Download, remote, peer)
			}
		}
	}
	if t.cfg.UDP {
		r.UDPOffload = t.udpOffload()
	}
	r.Notes = append(r.Notes, t.notes...)
	return r
}

func role(server bool) string {
	if server {
		return "server"
	}
	return "client"
}

// streamResult is one stream's final figures: this side's counts and, from
// the peer's results (ws, nil when missing), the other end's.
func (t *testRun) streamResult(s *flowStream, ws *iperfwire.Stream, remoteRetr bool, d time.Duration) StreamResult {
	bytes, packets, errs, ooo := t.localCounts(s)
	sr := StreamResult{ID: s.id, Reverse: t.streamReverse(s)}
	sr.Duration, sr.Sent.Retransmits = d, -1
	sr.LocalAddr, sr.RemoteAddr = s.addrs()
	omitted := func(v *iperfwire.Int) int64 {
		if v == nil {
			return 0
		}
		return int64(*v)
	}
	if s.send {
		sr.Sent.Bytes, sr.Sent.Packets = bytes, packets
		if s.udp {
			sr.Sent.LocalDrops, sr.Sent.LocalRetries = t.localRefused(s)
		}
		if !s.udp && s.finalInfo.OK {
			sr.Sent.Retransmits = s.finalInfo.TotalRetrans - s.retransAt
			sr.TCP = s.finalInfo.public()
			sr.Limits = limitsBetween(s.limAt, s.finalInfo.lim)
		}
		if ws != nil {
			sr.Received.Bytes = int64(*ws.Bytes)
			if s.udp {
				sr.Received.Packets = int64(*ws.Packets) - omitted(ws.OmittedPackets)
				sr.Received.LostPackets = int64(*ws.Errors) - omitted(ws.OmittedErrors)
				sr.Received.Jitter = seconds(float64(*ws.Jitter))
				sr.Received.OutOfOrder = omitted(ws.OutOfOrder)
			}
		}
	} else {
		sr.Received.Bytes = bytes
		sr.Received.Packets, sr.Received.LostPackets, sr.Received.OutOfOrder = packets, errs, ooo
		sr.Received.Jitter = seconds(s.final.rx.Jitter)
		if ws != nil {
			sr.Sent.Bytes = int64(*ws.Bytes)
			if remoteRetr && !s.udp {
				sr.Sent.Retransmits = int64(*ws.Retransmits)
			}
			if !s.udp {
				sr.Limits = decodeLimits(ws.TCPLimits)
			}
			if s.udp {
				sr.Sent.Packets = int64(*ws.Packets) - omitted(ws.OmittedPackets)
				sr.Sent.LocalDrops, sr.Sent.LocalRetries = intOr0(ws.LocalDrops), intOr0(ws.LocalRetries)
			}
		}
	}
	sr.Received.LostPercent = percent(sr.Received.LostPackets, sr.Received.Packets)
	sr.Sent.BitsPerSecond = bps(sr.Sent.Bytes, d.Seconds())
	sr.Received.BitsPerSecond = bps(sr.Received.Bytes, d.Seconds())
	return sr
}

// udpOffload names the UDP fast paths this side's streams used.
func (t *testRun) udpOffload() string {
	gso, gro := false, false
	for _, s := range t.eng.streams {
		if s.fast != nil {
			gso, gro = gso || s.fast.gso, gro || s.fast.gro
		}
	}
	if !udpFastAvailable {
		t.note("udp gso/gro: not available on this platform")
	}
	switch {
	case gso && gro:
		return "gso+gro"
	case gso:
		return "gso"
	case gro:
		return "gro"
	}
	return "none"
}

func (t *testRun) summary(ss []StreamResult, reverse bool, d time.Duration) *Summary {
	var sum Summary
	var jitter time.Duration
	var lims []*TCPLimits
	var sent []int64
	for _, s := range ss {
		if s.Reverse != reverse {
			continue
		}
		lims, sent = append(lims, s.Limits), append(sent, s.Sent.Bytes)
		sum.Streams++
		sum.Sent.Bytes += s.Sent.Bytes
		sum.Received.Bytes += s.Received.Bytes
		if s.Sent.Retransmits < 0 {
			sum.Sent.Retransmits = math.MinInt64
		} else if sum.Sent.Retransmits >= 0 {
			sum.Sent.Retransmits += s.Sent.Retransmits
		}
		sum.Sent.Packets += s.Sent.Packets
		sum.Sent.LocalDrops += s.Sent.LocalDrops
		sum.Sent.LocalRetries += s.Sent.LocalRetries
		sum.Received.Packets += s.Received.Packets
		sum.Received.LostPackets += s.Received.LostPackets
		sum.Received.OutOfOrder += s.Received.OutOfOrder
		jitter += s.Received.Jitter
	}
	if sum.Streams == 0 {
		return nil
	}
	if sum.Sent.Retransmits < 0 {
		sum.Sent.Retransmits = -1
	}
	sum.Limits = combineLimits(lims, sent)
	sum.Duration = d
	sum.Received.Jitter = jitter / time.Duration(sum.Streams)
	sum.Received.LostPercent = percent(sum.Received.LostPackets, sum.Received.Packets)
	sum.Sent.BitsPerSecond = bps(sum.Sent.Bytes, d.Seconds())
	sum.Received.BitsPerSecond = bps(sum.Received.Bytes, d.Seconds())
	if rate := rate(t.cfg); rate > 0 {
		sum.SenderLimited = sum.Sent.BitsPerSecond < 0.95*rate*float64(sum.Streams)
	}
	sum.QueueLimited = sum.Sent.LocalDrops > 0 || sum.Sent.LocalRetries > 0
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
