package throughput

import (
	"encoding/json"
	"net"
)

// hostSample is one reading of the counters a ledger takes from the host
// and the interface, cumulative.
type hostSample struct {
	iface   string
	vals    map[string]int64
	unknown map[string]string
}

func (h *hostSample) unknownAll(why string) {
	for _, k := range []string{ctrTxDrop, ctrRxDrop, ctrBWIn, ctrBWOut, ctrPPS, ctrConntrackAl, ctrLinklocal,
		ctrSoftnet, ctrReasm, ctrConntrack, ctrRcvbuf} {
		h.unknown[k] = why
	}
}

// delta is the change from a to b; a counter that went backwards (a
// driver reset, a 32-bit wrap) is unknown.
func (a hostSample) delta(b hostSample) *hostCounters {
	h := &hostCounters{Iface: b.iface, Deltas: map[string]int64{}, Unknown: map[string]string{}}
	for k, why := range a.unknown {
		h.Unknown[k] = why
	}
	for k, why := range b.unknown {
		h.Unknown[k] = why
	}
	for k, vb := range b.vals {
		va, ok := a.vals[k]
		switch {
		case !ok || a.iface != b.iface:
			if h.Unknown[k] == "" {
				h.Unknown[k] = k + ": not read at the start"
			}
		case vb < va:
			h.Unknown[k] = k + " went backwards (a driver reset or a wrap)"
		default:
			h.Deltas[k] = vb - va
		}
	}
	return h
}

// sampleHost reads the host counters for the test's UDP streams (the
// first stream's namespace and interface stand for all: they share the
// one peer); ok is false for a TCP test or one without streams.
func (t *testRun) sampleHost() (hostSample, bool) {
	if !t.cfg.UDP || len(t.eng.streams) == 0 {
		return hostSample{}, false
	}
	s := t.eng.streams[0]
	var ip net.IP
	if ua, ok := s.conn.LocalAddr().(*net.UDPAddr); ok {
		ip = ua.IP
	}
	if (ip == nil || ip.IsUnspecified()) && t.localIP != nil {
		ip = t.localIP
	}
	return readHostSample(s.held, ip), true
}

// ledgerBegin takes the ledger's starting readings: the host's counters
// and each receiving socket's drops.
func (t *testRun) ledgerBegin() {
	if !t.cfg.UDP {
		return
	}
	for i, s := range t.eng.streams {
		if s.udp && (i == 0 || !s.send) {
			s.held = holdSocket(s.conn)
			s.dropsAt.sockDrops, s.dropsAt.sockDropsOK = s.held.drops()
		}
	}
	t.hostAt, _ = t.sampleHost()
}

// ledgerClose takes the closing readings once the streams stopped and
// before they close: the receivers have read all that arrived, so each
// socket's drop counter misses none. Only the first call reads.
func (t *testRun) ledgerClose() {
	if t.hostAt.vals == nil || t.counters != nil {
		return
	}
	for _, s := range t.eng.streams {
		if s.udp && !s.send {
			s.dropsEnd.sockDrops, s.dropsEnd.sockDropsOK = s.held.drops()
		}
	}
	end, _ := t.sampleHost()
	t.counters = t.hostAt.delta(end)
	for _, s := range t.eng.streams {
		s.held.release()
	}
}

// lossCounters is this side's loss_counters key, nil for a TCP test.
func (t *testRun) lossCounters() json.RawMessage {
	if t.counters == nil {
		return nil
	}
	b, err := json.Marshal(t.counters)
	if err != nil {
		return nil
	}
	return b
}

// recvLedger is what a receiving stream tells the sender in its results
// entry (the loss_ledger key): distinct datagrams received, duplicates,
// and the socket's drops where known.
type recvLedger struct {
	Received    int64  `json:"received"`
	Duplicated  int64  `json:"duplicated"`
	Late        int64  `json:"late"`
	SocketDrops *int64 `json:"socket_drops,omitempty"`
}

// recvCounts returns a receiving stream's counted ledger figures.
func (t *testRun) recvCounts(s *flowStream) recvLedger {
	f, o := s.final, s.omitSnap
	r := recvLedger{Duplicated: f.rx.Duplicated - o.rx.Duplicated, Late: s.late.Load()}
	r.Received = f.rx.Datagrams - o.rx.Datagrams - r.Duplicated
	base, end := s.dropsAt, s.dropsEnd
	if o.sockDropsOK {
		base = o
	}
	if end.sockDropsOK && base.sockDropsOK && end.sockDrops >= base.sockDrops {
		r.SocketDrops = i64(end.sockDrops - base.sockDrops)
	}
	return r
}

// encodeRecvLedger is s's loss_ledger key.
func (t *testRun) encodeRecvLedger(s *flowStream) json.RawMessage {
	b, err := json.Marshal(t.recvCounts(s))
	if err != nil {
		return nil
	}
	return b
}

// decodeRecvLedger is a peer's loss_ledger key, nil when absent or bad.
func decodeRecvLedger(raw json.RawMessage) *recvLedger {
	if len(raw) == 0 {
		return nil
	}
	var r recvLedger
	if err := json.Unmarshal(raw, &r); err != nil || r.Received < 0 || r.Duplicated < 0 || r.Late < 0 ||
		(r.SocketDrops != nil && *r.SocketDrops < 0) {
		return nil
	}
	return &r
}
