package iperf3doc

import (
	"encoding/json"
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"net"
	"runtime"
	"strconv"
	"time"
)

// Doc is the -J document, field for field as iperf3 3.12 writes it.
type Doc struct {
	Start     ijStart      `json:"start"`
	Intervals []ijInterval `json:"intervals"`
	End       ijEnd        `json:"end"`
	// ServerOutputJSON is the server's own document (get_server_output).
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText string          `json:"server_output_text,omitempty"`
	// ExtraData is the client's --extra-data.
	ExtraData string `json:"extra_data,omitempty"`
}

type ijConnected struct {
	Socket     int    `json:"socket"`
	LocalHost  string `json:"local_host"`
	LocalPort  int    `json:"local_port"`
	RemoteHost string `json:"remote_host"`
	RemotePort int    `json:"remote_port"`
}

type ijHostPort struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type ijStart struct {
	Connected  []ijConnected `json:"connected"`
	Version    string        `json:"version"`
	SystemInfo string        `json:"system_info"`
	Timestamp  struct {
		Time          string `json:"time"`
		TimeSecs      int64  `json:"timesecs"`
		TimeMillisecs int64  `json:"timemillisecs"`
	} `json:"timestamp"`
	ConnectingTo       *ijHostPort `json:"connecting_to,omitempty"`
	AcceptedConnection *ijHostPort `json:"accepted_connection,omitempty"`
	Cookie             string      `json:"cookie"`
	TCPMSSDefault      *int        `json:"tcp_mss_default,omitempty"`
	TCPMSS             *int        `json:"tcp_mss,omitempty"`
	TargetBitrate      float64     `json:"target_bitrate"`
	FQRate             float64     `json:"fq_rate"`
	SockBufsize        int         `json:"sock_bufsize"`
	SndbufActual       int         `json:"sndbuf_actual"`
	RcvbufActual       int         `json:"rcvbuf_actual"`
	TestStart          struct {
		Protocol      string  `json:"protocol"`
		NumStreams    int     `json:"num_streams"`
		Blksize       int     `json:"blksize"`
		Omit          float64 `json:"omit"`
		Duration      float64 `json:"duration"`
		Bytes         int64   `json:"bytes"`
		Blocks        int64   `json:"blocks"`
		Reverse       int     `json:"reverse"`
		TOS           int     `json:"tos"`
		TargetBitrate float64 `json:"target_bitrate"`
		Bidir         int     `json:"bidir"`
		FQRate        float64 `json:"fqrate"`
		Interval      float64 `json:"interval"`
		GSO           int     `json:"gso"`
		GRO           int     `json:"gro"`
	} `json:"test_start"`
}

// ijStream is an interval entry or an end entry; which keys appear depends
// on protocol and role, as in iperf3.
type ijStream struct {
	Socket        int      `json:"socket,omitempty"`
	Start         float64  `json:"start"`
	End           float64  `json:"end"`
	Seconds       float64  `json:"seconds"`
	Bytes         int64    `json:"bytes"`
	BitsPerSecond float64  `json:"bits_per_second"`
	Retransmits   *int64   `json:"retransmits,omitempty"`
	SndCwnd       *int64   `json:"snd_cwnd,omitempty"`
	SndWnd        *int64   `json:"snd_wnd,omitempty"`
	RTT           *int64   `json:"rtt,omitempty"`
	RTTVar        *int64   `json:"rttvar,omitempty"`
	PMTU          *int64   `json:"pmtu,omitempty"`
	Reorder       *int64   `json:"reorder,omitempty"`
	MaxSndCwnd    *int64   `json:"max_snd_cwnd,omitempty"`
	MaxSndWnd     *int64   `json:"max_snd_wnd,omitempty"`
	MaxRTT        *int64   `json:"max_rtt,omitempty"`
	MinRTT        *int64   `json:"min_rtt,omitempty"`
	MeanRTT       *int64   `json:"mean_rtt,omitempty"`
	JitterMs      *float64 `json:"jitter_ms,omitempty"`
	LostPackets   *int64   `json:"lost_packets,omitempty"`
	Packets       *int64   `json:"packets,omitempty"`
	LostPercent   *float64 `json:"lost_percent,omitempty"`
	OutOfOrder    *int64   `json:"out_of_order,omitempty"`
	Omitted       *bool    `json:"omitted,omitempty"`
	Sender        bool     `json:"sender"`
	// TCPLimits is netperfkit's addition: what held the TCP sender back
	// (TCPLimits), where known.
	TCPLimits *flowmodel.TCPLimits `json:"tcp_limits,omitempty"`
	// netperfkit's own: UDP datagrams the sender's host refused (Counts),
	// beside lost_packets and only when non-zero, so iperf3's keys and a
	// clean run's document are as 3.21 writes them.
	LocalDrops   *int64 `json:"local_drops,omitempty"`
	LocalRetries *int64 `json:"local_retries,omitempty"`
	// LossLedger is netperfkit's too: where the direction's datagrams went
	// (Ledger), in end.sum and end.sum_bidir_reverse only.
	LossLedger *flowmodel.Ledger `json:"loss_ledger,omitempty"`
}

// ijLocal adds the sender's local refusals from c to e, when there were any.
func ijLocal(e *ijStream, c *flowmodel.Counts) {
	if c.LocalDrops > 0 {
		e.LocalDrops = pi(c.LocalDrops)
	}
	if c.LocalRetries > 0 {
		e.LocalRetries = pi(c.LocalRetries)
	}
}

type ijInterval struct {
	Streams         []ijStream `json:"streams"`
	Sum             *ijStream  `json:"sum,omitempty"`
	SumBidirReverse *ijStream  `json:"sum_bidir_reverse,omitempty"`
}

type ijEndStream struct {
	Sender   *ijStream `json:"sender,omitempty"`
	Receiver *ijStream `json:"receiver,omitempty"`
	UDP      *ijStream `json:"udp,omitempty"`
}

type ijEnd struct {
	Streams                 []ijEndStream            `json:"streams"`
	Sum                     *ijStream                `json:"sum,omitempty"`
	SumBidirReverse         *ijStream                `json:"sum_bidir_reverse,omitempty"`
	SumSent                 *ijStream                `json:"sum_sent,omitempty"`
	SumReceived             *ijStream                `json:"sum_received,omitempty"`
	SumSentBidirReverse     *ijStream                `json:"sum_sent_bidir_reverse,omitempty"`
	SumReceivedBidirReverse *ijStream                `json:"sum_received_bidir_reverse,omitempty"`
	CPU                     flowmodel.CPUUtilization `json:"cpu_utilization_percent"`
	SenderTCPCongestion     string                   `json:"sender_tcp_congestion,omitempty"`
	ReceiverTCPCongestion   string                   `json:"receiver_tcp_congestion,omitempty"`
}

func pi(v int64) *int64     { return &v }
func pf(v float64) *float64 { return &v }
func pb(v bool) *bool       { return &v }
func socketOf(id int) int   { return id + 4 }
func b2i(b bool) int        { return map[bool]int{true: 1}[b] }

// rate is the per-stream target in bits/s, 0 when unlimited.
func rate(c *flowmodel.Config) float64 {
	if c.Bitrate > 0 {
		return c.Bitrate
	}
	return 0
}
func udp(r *flowmodel.Result) bool { return r.Config.UDP }
func localSends(r *flowmodel.Result, reverse bool) bool {
	if r.Role == "server" {
		return reverse
	}
	return !reverse
}

// JSON renders r as iperf3's -J document (start, intervals, end with
// sum_sent/sum_received for TCP, sum with jitter_ms/lost_packets/
// lost_percent for UDP, the *_bidir_reverse sums with bidir, and
// cpu_utilization_percent), so scripts that parse iperf3 keep working.
// Interval times restart at zero after the omit period, as in iperf3.
func JSON(r *flowmodel.Result) ([]byte, error) {
	return json.MarshalIndent(doc(r), "", "\t")
}

func doc(r *flowmodel.Result) *Doc {
	d := &Doc{Intervals: []ijInterval{}}
	ijStartOf(&d.Start, r)
	// The primary direction is the one of the first stream; with --bidir
	// the other one is reported in *_bidir_reverse.
	primary := false
	if len(r.Streams) > 0 {
		primary = r.Streams[0].Reverse
	}
	for _, iv := range r.Intervals {
		d.Intervals = append(d.Intervals, ijIntervalOf(r, iv, primary))
	}
	ijEndOf(&d.End, r, primary)
	d.ServerOutputJSON, d.ServerOutputText = r.ServerOutputJSON, r.ServerOutputText
	d.ExtraData = r.Config.ExtraData
	return d
}

func ijStartOf(st *ijStart, r *flowmodel.Result) {
	st.Connected = []ijConnected{}
	for _, s := range r.Streams {
		lh, lp := splitHP(s.LocalAddr)
		rh, rp := splitHP(s.RemoteAddr)
		st.Connected = append(st.Connected, ijConnected{Socket: socketOf(s.ID), LocalHost: lh, LocalPort: lp, RemoteHost: rh, RemotePort: rp})
	}
	st.Version = "iperf 3.12 (netperfkit throughput)"
	st.SystemInfo = runtime.GOOS + " " + runtime.GOARCH
	ts := r.Start.UTC()
	st.Timestamp.Time, st.Timestamp.TimeSecs, st.Timestamp.TimeMillisecs = ts.Format("Mon, 02 Jan 2006 15:04:05 GMT"), ts.Unix(), ts.UnixMilli()
	h, p := splitHP(r.RemoteAddr)
	if r.Role == "server" {
		st.AcceptedConnection = &ijHostPort{h, p}
	} else {
		st.ConnectingTo = &ijHostPort{h, p}
	}
	c := &r.Config
	st.Cookie = r.Cookie
	st.TargetBitrate = rate(c)
	st.SockBufsize, st.SndbufActual, st.RcvbufActual = c.Window, r.SndBufActual, r.RcvBufActual
	ts2 := &st.TestStart
	ts2.Protocol = "TCP"
	if c.UDP {
		ts2.Protocol = "UDP"
	}
	ts2.NumStreams, ts2.Blksize, ts2.Omit, ts2.Duration = c.Streams, c.BlockLen, secs(c.Omit), secs(c.Duration)
	ts2.Bytes, ts2.Blocks, ts2.Reverse, ts2.TargetBitrate, ts2.Bidir = c.Bytes, c.Blocks, b2i(c.Reverse), rate(c), b2i(c.Bidir)
	ts2.TOS = c.TOS
	st.FQRate, ts2.FQRate = c.FQRate, c.FQRate
	// 3.21 reports the offloads the test asked for (--gsro), 0 or 1.
	ts2.GSO, ts2.GRO = b2i(c.UDP && flowmodel.On(c.GSO)), b2i(c.UDP && flowmodel.On(c.GRO))
	if c.Interval > 0 {
		ts2.Interval = secs(c.Interval)
	}
	if !c.UDP {
		// As iperf3: the MSS asked for, or the control connection's.
		if c.MSS > 0 {
			st.TCPMSS = &c.MSS
		} else if r.ControlMSS > 0 {
			st.TCPMSSDefault = &r.ControlMSS
		}
	}
}

func ijIntervalOf(r *flowmodel.Result, iv flowmodel.Interval, primary bool) ijInterval {
	off := time.Duration(0)
	if !iv.Omitted {
		off = r.Config.Omit
	}
	start, end := secs(max(iv.Start-off, 0)), secs(iv.End-off)
	out := ijInterval{Streams: []ijStream{}}
	for _, s := range iv.Streams {
		e := ijStream{Socket: socketOf(s.ID), Start: start, End: end, Seconds: end - start, Bytes: s.Bytes,
			BitsPerSecond: s.BitsPerSecond, Omitted: pb(iv.Omitted), Sender: s.Sender}
		// The sender's TCP_INFO: ours, or the server's merged in for the
		// streams it sent (where iperf3 reports nothing).
		if !udp(r) && (s.Sender || s.TCP != nil) {
			ti := s.TCP
			if ti == nil {
				ti = &flowmodel.TCPInfo{}
			}
			e.Retransmits, e.SndCwnd, e.SndWnd, e.RTT, e.RTTVar, e.PMTU = pi(s.Retransmits), pi(ti.SndCwndBytes), pi(ti.SndWndBytes), pi(micros(ti.RTT)), pi(micros(ti.RTTVar)), pi(ti.PMTU)
			e.Reorder = pi(ti.ReorderSeen)
			e.TCPLimits = s.Limits
		}
		ijUDPCounts(&e, udp(r), s.Sender, &s.Counts)
		out.Streams = append(out.Streams, e)
	}
	mk := func(sum *flowmodel.Counts, reverse bool) *ijStream {
		if sum == nil {
			return nil
		}
		sender := localSends(r, reverse)
		e := &ijStream{Start: start, End: end, Seconds: end - start, Bytes: sum.Bytes, BitsPerSecond: sum.BitsPerSecond, Omitted: pb(iv.Omitted), Sender: sender}
		if !udp(r) && (sender || sumHasInfo(iv.Streams, reverse)) {
			e.Retransmits = pi(sum.Retransmits)
		}
		ijUDPCounts(e, udp(r), sender, sum)
		return e
	}
	up, down := mk(iv.Upload, false), mk(iv.Download, true)
	if primary {
		out.Sum, out.SumBidirReverse = down, up
	} else {
		out.Sum, out.SumBidirReverse = up, down
	}
	return out
}

// ijUDPCounts adds a UDP interval entry's packet columns: the sender's
// count, or the receiver's loss and jitter.
func ijUDPCounts(e *ijStream, udp, sender bool, c *flowmodel.Counts) {
	switch {
	case !udp:
	case sender:
		e.Packets = pi(c.Packets)
		ijLocal(e, c)
	default:
		e.JitterMs, e.LostPackets, e.Packets, e.LostPercent = pf(ms(c.Jitter)), pi(c.LostPackets), pi(c.Packets), pf(c.LostPercent)
	}
}

// ms is a duration in milliseconds, as iperf3's jitter_ms.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ijEndOf(en *ijEnd, r *flowmodel.Result, primary bool) {
	en.Streams = []ijEndStream{}
	for _, s := range r.Streams {
		en.Streams = append(en.Streams, ijEndStreamOf(r, &s))
	}
	pri, sec := r.Upload, r.Download
	priRev := false
	if primary {
		pri, sec, priRev = r.Download, r.Upload, true
	}
	en.SumSent, en.SumReceived = ijSums(r, pri, priRev)
	en.SumSentBidirReverse, en.SumReceivedBidirReverse = ijSums(r, sec, !priRev)
	if udp(r) {
		// iperf3's UDP "sum": the sender's bytes with the receiver's loss and jitter.
		udpSum := func(sm *flowmodel.Summary, recv *ijStream, rev bool) *ijStream {
			if sm == nil {
				return nil
			}
			s := *recv
			s.Bytes, s.BitsPerSecond, s.Sender = sm.Sent.Bytes, sm.Sent.BitsPerSecond, localSends(r, rev)
			ijLocal(&s, &sm.Sent)
			s.LossLedger = sm.Ledger
			return &s
		}
		en.Sum = udpSum(pri, en.SumReceived, priRev)
		en.SumBidirReverse = udpSum(sec, en.SumReceivedBidirReverse, !priRev)
	}
	en.CPU = r.CPU
	if !udp(r) {
		local, remote := r.Congestion, r.RemoteCongestion
		if local == "" {
			local = remote
		}
		if localSends(r, priRev) {
			en.SenderTCPCongestion, en.ReceiverTCPCongestion = local, remote
		} else {
			en.SenderTCPCongestion, en.ReceiverTCPCongestion = remote, local
		}
	}
}

func ijEndStreamOf(r *flowmodel.Result, s *flowmodel.StreamResult) ijEndStream {
	sender := localSends(r, s.Reverse)
	d := secs(s.Duration)
	if udp(r) {
		u := &ijStream{Socket: socketOf(s.ID), End: d, Seconds: d, Bytes: s.Sent.Bytes, BitsPerSecond: s.Sent.BitsPerSecond,
			JitterMs: pf(ms(s.Received.Jitter)), LostPackets: pi(s.Received.LostPackets), Packets: pi(s.Received.Packets), LostPercent: pf(s.Received.LostPercent),
			OutOfOrder: pi(s.Received.OutOfOrder), Sender: sender}
		ijLocal(u, &s.Sent)
		return ijEndStream{UDP: u}
	}
	snd := &ijStream{Socket: socketOf(s.ID), End: d, Seconds: d, Bytes: s.Sent.Bytes, BitsPerSecond: s.Sent.BitsPerSecond, Sender: sender}
	if s.Sent.Retransmits >= 0 {
		snd.Retransmits = pi(s.Sent.Retransmits)
	}
	// 3.21 writes these keys with retransmits (its sender-has-retransmits
	// branch), 0 when it has no TCP_INFO for the stream (the client of a
	// -R test): jq scripts read them unconditionally.
	if st := streamRTTStats(r, s.ID); s.Sent.Retransmits >= 0 {
		if st.maxRTT <= 0 {
			st = rttStats{}
		}
		snd.MaxSndCwnd, snd.MaxRTT, snd.MinRTT, snd.MeanRTT = pi(st.maxCwnd), pi(micros(st.maxRTT)), pi(micros(st.minRTT)), pi(micros(st.avg))
		snd.MaxSndWnd, snd.Reorder = pi(st.maxSndWnd), pi(st.reorder)
	}
	if !udp(r) {
		snd.TCPLimits = s.Limits
	}
	rcv := &ijStream{Socket: socketOf(s.ID), End: d, Seconds: d, Bytes: s.Received.Bytes, BitsPerSecond: s.Received.BitsPerSecond, Sender: sender}
	return ijEndStream{Sender: snd, Receiver: rcv}
}

func ijSums(r *flowmodel.Result, sm *flowmodel.Summary, reverse bool) (sent, recv *ijStream) {
	if sm == nil {
		return nil, nil
	}
	sender := localSends(r, reverse)
	d := secs(sm.Duration)
	sent = &ijStream{End: d, Seconds: d, Bytes: sm.Sent.Bytes, BitsPerSecond: sm.Sent.BitsPerSecond, Sender: sender}
	recv = &ijStream{End: d, Seconds: d, Bytes: sm.Received.Bytes, BitsPerSecond: sm.Received.BitsPerSecond, Sender: sender}
	if !udp(r) && sm.Sent.Retransmits >= 0 {
		sent.Retransmits = pi(sm.Sent.Retransmits)
	}
	if !udp(r) {
		sent.TCPLimits = sm.Limits
	}
	if udp(r) {
		// 3.21 marks a UDP sum_sent as the sender's and a sum_received as
		// the receiver's, whichever side writes them (its TCP sums carry
		// this side's role).
		sent.Sender, recv.Sender = true, false
		sent.JitterMs, sent.LostPackets, sent.Packets, sent.LostPercent = pf(0), pi(0), pi(sm.Sent.Packets), pf(0)
		ijLocal(sent, &sm.Sent)
		recv.JitterMs, recv.LostPackets, recv.Packets, recv.LostPercent = pf(ms(sm.Received.Jitter)), pi(sm.Received.LostPackets), pi(sm.Received.Packets), pf(sm.Received.LostPercent)
	}
	return sent, recv
}

func splitHP(a string) (string, int) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func sumHasInfo(ss []flowmodel.StreamInterval, reverse bool) bool {
	for _, s := range ss {
		if s.Reverse == reverse && s.TCP != nil {
			return true
		}
	}
	return false
}
