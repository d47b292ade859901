package throughput

import (
	"encoding/json"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

// The -J document, field for field as iperf3 3.12 writes it.
type ijDoc struct {
	Start     ijStart      `json:"start"`
	Intervals []ijInterval `json:"intervals"`
	End       ijEnd        `json:"end"`
	// ServerOutputJSON is the server's own document (get_server_output).
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText string          `json:"server_output_text,omitempty"`
	// Latency is this package's addition: the RTT under load (Config.Latency).
	Latency *latency.PingPongResult `json:"latency,omitempty"`
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
		Time     string `json:"time"`
		TimeSecs int64  `json:"timesecs"`
	} `json:"timestamp"`
	ConnectingTo       *ijHostPort `json:"connecting_to,omitempty"`
	AcceptedConnection *ijHostPort `json:"accepted_connection,omitempty"`
	Cookie             string      `json:"cookie"`
	TCPMSSDefault      int         `json:"tcp_mss_default,omitempty"`
	TargetBitrate      float64     `json:"target_bitrate"`
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
		Bidir         int     `json:"bidir,omitempty"`
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
	MaxSndCwnd    *int64   `json:"max_snd_cwnd,omitempty"`
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
	Streams                 []ijEndStream  `json:"streams"`
	Sum                     *ijStream      `json:"sum,omitempty"`
	SumBidirReverse         *ijStream      `json:"sum_bidir_reverse,omitempty"`
	SumSent                 *ijStream      `json:"sum_sent,omitempty"`
	SumReceived             *ijStream      `json:"sum_received,omitempty"`
	SumSentBidirReverse     *ijStream      `json:"sum_sent_bidir_reverse,omitempty"`
	SumReceivedBidirReverse *ijStream      `json:"sum_received_bidir_reverse,omitempty"`
	CPU                     CPUUtilization `json:"cpu_utilization_percent"`
	SenderTCPCongestion     string         `json:"sender_tcp_congestion,omitempty"`
	ReceiverTCPCongestion   string         `json:"receiver_tcp_congestion,omitempty"`
}

func pi(v int64) *int64     { return &v }
func pf(v float64) *float64 { return &v }
func pb(v bool) *bool       { return &v }
func socketOf(id int) int   { return id + 4 }
func b2i(b bool) int        { return map[bool]int{true: 1}[b] }
func (r *Result) udp() bool { return r.Protocol == "udp" }
func (r *Result) localSends(reverse bool) bool {
	if r.Role == "server" {
		return reverse
	}
	return !reverse
}

// IperfJSON renders r as iperf3's -J document (start, intervals, end with
// sum_sent/sum_received for TCP, sum with jitter_ms/lost_packets/
// lost_percent for UDP, the *_bidir_reverse sums with bidir, and
// cpu_utilization_percent), so scripts that parse iperf3 keep working.
// Interval times restart at zero after the omit period, as in iperf3.
func IperfJSON(r *Result) ([]byte, error) {
	return json.MarshalIndent(iperfDoc(r), "", "\t")
}

func iperfDoc(r *Result) *ijDoc {
	d := &ijDoc{Intervals: []ijInterval{}}
	st := &d.Start
	st.Connected = []ijConnected{}
	for _, s := range r.Streams {
		lh, lp := splitHP(s.LocalAddr)
		rh, rp := splitHP(s.RemoteAddr)
		st.Connected = append(st.Connected, ijConnected{Socket: socketOf(s.ID), LocalHost: lh, LocalPort: lp, RemoteHost: rh, RemotePort: rp})
	}
	st.Version = "iperf 3.12 (netperfkit throughput)"
	st.SystemInfo = runtime.GOOS + " " + runtime.GOARCH
	ts := time.Unix(r.StartUnix, 0).UTC()
	st.Timestamp.Time, st.Timestamp.TimeSecs = ts.Format("Mon, 02 Jan 2006 15:04:05 GMT"), r.StartUnix
	h, p := splitHP(r.RemoteAddr)
	if r.Role == "server" {
		st.AcceptedConnection = &ijHostPort{h, p}
	} else {
		st.ConnectingTo = &ijHostPort{h, p}
	}
	st.Cookie = r.Cookie
	st.TargetBitrate = r.BitrateBitsPerSecond
	st.SockBufsize, st.SndbufActual, st.RcvbufActual = r.WindowBytes, r.SndBufActual, r.RcvBufActual
	ts2 := &st.TestStart
	ts2.Protocol = "TCP"
	if r.udp() {
		ts2.Protocol = "UDP"
	}
	ts2.NumStreams, ts2.Blksize, ts2.Omit, ts2.Duration = r.NumStreams, r.BlockLen, r.OmitSeconds, r.DurationSeconds
	ts2.Bytes, ts2.Blocks, ts2.Reverse, ts2.TargetBitrate, ts2.Bidir = r.Bytes, r.Blocks, b2i(r.Reverse), r.BitrateBitsPerSecond, b2i(r.Bidir)

	// The primary direction is the one of the first stream; with --bidir
	// the other one is reported in *_bidir_reverse.
	primary := false
	if len(r.Streams) > 0 {
		primary = r.Streams[0].Reverse
	}
	for _, iv := range r.Intervals {
		off := 0.0
		if !iv.Omitted {
			off = r.OmitSeconds
		}
		start, end := iv.StartSeconds-off, iv.EndSeconds-off
		if start < 0 {
			start = 0
		}
		out := ijInterval{Streams: []ijStream{}}
		for _, s := range iv.Streams {
			e := ijStream{Socket: socketOf(s.ID), Start: start, End: end, Seconds: end - start, Bytes: s.Bytes,
				BitsPerSecond: s.BitsPerSecond, Omitted: pb(iv.Omitted), Sender: s.Sender}
			// The sender's TCP_INFO: ours, or the server's merged in for the
			// streams it sent (where iperf3 reports nothing).
			if !r.udp() && (s.Sender || s.TCPInfo) {
				e.Retransmits, e.SndCwnd, e.SndWnd, e.RTT, e.RTTVar, e.PMTU = pi(s.Retransmits), pi(s.SndCwndBytes), pi(0), pi(s.RTTUs), pi(s.RTTVarUs), pi(s.PMTU)
			}
			if r.udp() {
				if s.Sender {
					e.Packets = pi(s.Packets)
				} else {
					e.JitterMs, e.LostPackets, e.Packets, e.LostPercent = pf(s.JitterMs), pi(s.LostPackets), pi(s.Packets), pf(s.LostPercent)
				}
			}
			out.Streams = append(out.Streams, e)
		}
		mk := func(sum *IntervalSum, reverse bool) *ijStream {
			if sum == nil {
				return nil
			}
			sender := r.localSends(reverse)
			e := &ijStream{Start: start, End: end, Seconds: end - start, Bytes: sum.Bytes, BitsPerSecond: sum.BitsPerSecond, Omitted: pb(iv.Omitted), Sender: sender}
			if !r.udp() && (sender || sumHasInfo(iv.Streams, reverse)) {
				e.Retransmits = pi(sum.Retransmits)
			}
			if r.udp() {
				if sender {
					e.Packets = pi(sum.Packets)
				} else {
					e.JitterMs, e.LostPackets, e.Packets, e.LostPercent = pf(sum.JitterMs), pi(sum.LostPackets), pi(sum.Packets), pf(sum.LostPercent)
				}
			}
			return e
		}
		up, down := mk(iv.Upload, false), mk(iv.Download, true)
		if primary {
			out.Sum, out.SumBidirReverse = down, up
		} else {
			out.Sum, out.SumBidirReverse = up, down
		}
		d.Intervals = append(d.Intervals, out)
	}

	en := &d.End
	en.Streams = []ijEndStream{}
	for _, s := range r.Streams {
		sender := r.localSends(s.Reverse)
		if r.udp() {
			u := &ijStream{Socket: socketOf(s.ID), End: s.Seconds, Seconds: s.Seconds, Bytes: s.SentBytes, BitsPerSecond: s.SentBitsPerSecond,
				JitterMs: pf(s.JitterMs), LostPackets: pi(s.LostPackets), Packets: pi(s.Packets), LostPercent: pf(s.LostPercent),
				OutOfOrder: pi(s.OutOfOrder), Sender: sender}
			en.Streams = append(en.Streams, ijEndStream{UDP: u})
			continue
		}
		snd := &ijStream{Socket: socketOf(s.ID), End: s.Seconds, Seconds: s.Seconds, Bytes: s.SentBytes, BitsPerSecond: s.SentBitsPerSecond, Sender: sender}
		if s.Retransmits >= 0 {
			snd.Retransmits = pi(s.Retransmits)
		}
		if s.MaxRTTUs > 0 {
			snd.MaxSndCwnd, snd.MaxRTT, snd.MinRTT, snd.MeanRTT = pi(s.MaxSndCwndBytes), pi(s.MaxRTTUs), pi(s.MinRTTUs), pi(s.MeanRTTUs)
		}
		rcv := &ijStream{Socket: socketOf(s.ID), End: s.Seconds, Seconds: s.Seconds, Bytes: s.ReceivedBytes, BitsPerSecond: s.ReceivedBitsPerSecond, Sender: sender}
		en.Streams = append(en.Streams, ijEndStream{Sender: snd, Receiver: rcv})
	}
	sums := func(sm *Summary, reverse bool) (sent, recv *ijStream) {
		if sm == nil {
			return nil, nil
		}
		sender := r.localSends(reverse)
		sent = &ijStream{End: sm.Seconds, Seconds: sm.Seconds, Bytes: sm.SentBytes, BitsPerSecond: sm.SentBitsPerSecond, Sender: sender}
		recv = &ijStream{End: sm.Seconds, Seconds: sm.Seconds, Bytes: sm.ReceivedBytes, BitsPerSecond: sm.ReceivedBitsPerSecond, Sender: sender}
		if !r.udp() && sm.Retransmits >= 0 {
			sent.Retransmits = pi(sm.Retransmits)
		}
		if r.udp() {
			sent.JitterMs, sent.LostPackets, sent.Packets, sent.LostPercent = pf(0), pi(0), pi(sm.SentPackets), pf(0)
			recv.JitterMs, recv.LostPackets, recv.Packets, recv.LostPercent = pf(sm.JitterMs), pi(sm.LostPackets), pi(sm.Packets), pf(sm.LostPercent)
		}
		return sent, recv
	}
	pri, sec := r.Upload, r.Download
	priRev := false
	if primary {
		pri, sec, priRev = r.Download, r.Upload, true
	}
	en.SumSent, en.SumReceived = sums(pri, priRev)
	en.SumSentBidirReverse, en.SumReceivedBidirReverse = sums(sec, !priRev)
	if r.udp() {
		// iperf3's UDP "sum": the sender's bytes with the receiver's loss and jitter.
		udpSum := func(sm *Summary, sent, recv *ijStream) *ijStream {
			if sm == nil {
				return nil
			}
			s := *recv
			s.Bytes, s.BitsPerSecond, s.Sender = sm.SentBytes, sm.SentBitsPerSecond, sent.Sender
			return &s
		}
		en.Sum = udpSum(pri, en.SumSent, en.SumReceived)
		en.SumBidirReverse = udpSum(sec, en.SumSentBidirReverse, en.SumReceivedBidirReverse)
	}
	en.CPU = r.CPU
	if !r.udp() {
		local, remote := r.Congestion, r.RemoteCongestion
		if local == "" {
			local = remote
		}
		if r.localSends(priRev) {
			en.SenderTCPCongestion, en.ReceiverTCPCongestion = local, remote
		} else {
			en.SenderTCPCongestion, en.ReceiverTCPCongestion = remote, local
		}
	}
	d.ServerOutputJSON, d.ServerOutputText = r.ServerOutputJSON, r.ServerOutputText
	d.Latency = r.Latency
	return d
}

func splitHP(a string) (string, int) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func sumHasInfo(ss []StreamInterval, reverse bool) bool {
	for _, s := range ss {
		if s.Reverse == reverse && s.TCPInfo {
			return true
		}
	}
	return false
}
