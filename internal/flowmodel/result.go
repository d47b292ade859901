package flowmodel

import (
	"encoding/json"
	"time"
)

// Counts are one stream's figures, or one direction's sum, over an
// interval or a whole test, as one end counted them.
type Counts struct {
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// Retransmits by the TCP sender; in an interval meaningful where the
	// sender's TCP_INFO is known (StreamInterval.TCP is set).
	Retransmits int64 `json:"retransmits"`
	// UDP: datagrams sent (sender) or expected (receiver: the highest
	// counter seen); the receiver's lost and out-of-order datagrams and
	// iperf3's smoothed jitter.
	Packets     int64         `json:"packets"`
	LostPackets int64         `json:"lost_packets"`
	LostPercent float64       `json:"lost_percent"`
	OutOfOrder  int64         `json:"out_of_order"`
	Jitter      time.Duration `json:"jitter_ns"`
	// LocalDrops are UDP datagrams the sender's own host refused (ENOBUFS:
	// a full qdisc or device queue) and the sender dropped
	// (Config.UDPKeepRate): neither sent (Packets) nor lost on the path
	// (LostPackets). Known where this side sends.
	LocalDrops int64 `json:"local_drops,omitempty"`
	// LocalRetries are UDP datagrams the sender's host refused and the
	// sender offered again once its queue had room (the default), each
	// refusal counted: the host, not the path, held the rate back.
	LocalRetries int64 `json:"local_retries,omitempty"`
}

// Interval is one interval report. Start and End are measured from the
// start of the test, omitted time included; Omitted marks intervals inside
// the omit period.
type Interval struct {
	Start   time.Duration    `json:"start_ns"`
	End     time.Duration    `json:"end_ns"`
	Omitted bool             `json:"omitted"`
	Streams []StreamInterval `json:"streams"`
	// Upload sums the client-to-server streams, Download the server-to-client
	// ones; a direction without streams is nil.
	Upload   *Counts `json:"upload,omitempty"`
	Download *Counts `json:"download,omitempty"`
}

// StreamInterval is one stream's share of an interval. For a UDP sender,
// Packets counts the datagrams sent.
type StreamInterval struct {
	Counts
	ID      int  `json:"id"`
	Sender  bool `json:"sender"`  // the reporting side sends on this stream
	Reverse bool `json:"reverse"` // data flows server to client
	// TCP is the sender's TCP_INFO where it is known (linux): the local
	// sender's, or for streams the server sends, the server's output merged
	// in after the test (Result.Intervals only, not live).
	TCP *TCPInfo `json:"tcp_info,omitempty"`
	// Limits is what held the sender back in the interval, where known
	// (the same senders as TCP); nil when unknown.
	Limits *TCPLimits `json:"tcp_limits,omitempty"`
}

// TCPInfo is the part of a TCP sender's TCP_INFO the reports carry.
type TCPInfo struct {
	SndCwndBytes int64         `json:"snd_cwnd_bytes"`
	RTT          time.Duration `json:"rtt_ns"`
	RTTVar       time.Duration `json:"rttvar_ns"`
	PMTU         int64         `json:"pmtu,omitempty"`
	// SndWndBytes is the peer's advertised receive window (tcpi_snd_wnd;
	// linux 5.4 and later, 0 elsewhere).
	SndWndBytes int64 `json:"snd_wnd_bytes,omitempty"`
	// ReorderSeen counts the reordering events the sender has seen
	// (tcpi_reord_seen; linux 4.19 and later, 0 elsewhere).
	ReorderSeen int64 `json:"reorder_seen,omitempty"`
}

// Totals are the final figures of one stream or one direction over the
// counted time (after the omit period), as each end counted them: Sent is
// the sender's view (bytes written, TCP retransmits, UDP datagrams sent),
// Received the receiver's (bytes read, UDP datagrams expected, lost and out
// of order, jitter). Sent.Retransmits is -1 when unknown.
type Totals struct {
	Duration time.Duration `json:"duration_ns"`
	Sent     Counts        `json:"sent"`
	Received Counts        `json:"received"`
}

// StreamResult is the final result of one stream.
type StreamResult struct {
	Totals
	ID         int    `json:"id"`
	LocalAddr  string `json:"local_addr,omitempty"`
	RemoteAddr string `json:"remote_addr,omitempty"`
	Reverse    bool   `json:"reverse"` // data flowed server to client
	// TCP is the sender's final TCP_INFO when this side sent (linux). The
	// per-interval figures, and their extremes, are in Result.Intervals.
	TCP *TCPInfo `json:"tcp_info,omitempty"`
	// Limits is what held the TCP sender back over the counted time: this
	// side's own accounting when it sent, the peer's (sent with its
	// results) when the peer did; nil when unknown.
	Limits *TCPLimits `json:"tcp_limits,omitempty"`
}

// Summary sums the streams of one direction of a test.
type Summary struct {
	Totals
	Streams int `json:"streams"`
	// SenderLimited is true when the sender fell more than 5% short of the
	// target rate (Config.Bitrate times Streams): the generator, not the network, was the bottleneck.
	SenderLimited bool `json:"sender_limited"`
	// Limits combines the streams' (TCPLimits: time fractions averaged,
	// retransmitted bytes weighted by bytes sent, delivery rates summed);
	// nil when any stream's are unknown.
	Limits *TCPLimits `json:"tcp_limits,omitempty"`
	// QueueLimited is true when the sender's own host refused datagrams
	// (Sent.LocalDrops or Sent.LocalRetries): its queue, not the path,
	// decided what left.
	QueueLimited bool `json:"queue_limited,omitempty"`
	// Ledger says where the direction's UDP datagrams went, line by line,
	// each count known or unknown with its source (README: "where did my
	// datagrams go"); nil for TCP, for a test that ended before the
	// results exchange, and in Result.Total.
	Ledger *Ledger `json:"loss_ledger,omitempty"`
}

// CPUUtilization is iperf3's CPU usage: percent of one wall-clock second
// spent in the process, for this host and the remote one.
type CPUUtilization struct {
	HostTotal    float64 `json:"host_total"`
	HostUser     float64 `json:"host_user"`
	HostSystem   float64 `json:"host_system"`
	RemoteTotal  float64 `json:"remote_total"`
	RemoteUser   float64 `json:"remote_user"`
	RemoteSystem float64 `json:"remote_system"`
}

// Result is the outcome of a test, from the side that ran it (Role). A run
// that fails or is cancelled returns what it has: Config and the addresses
// once connected, the counts so far once data flowed.
type Result struct {
	Role string `json:"role"` // "client" or "server"
	// Config is the test's settings with every default filled in; on the
	// server, as the client asked for them.
	Config     Config `json:"config"`
	LocalAddr  string `json:"local_addr"`
	RemoteAddr string `json:"remote_addr"`
	Cookie     string `json:"cookie"`
	// PeerVersion is the client_version the client sent (server side) or "".
	PeerVersion string    `json:"peer_version,omitempty"`
	Start       time.Time `json:"start"`

	SndBufActual int `json:"sndbuf_actual,omitempty"`
	RcvBufActual int `json:"rcvbuf_actual,omitempty"`
	// Congestion is the algorithm this side's streams used, RemoteCongestion the peer's.
	Congestion       string `json:"congestion,omitempty"`
	RemoteCongestion string `json:"remote_congestion,omitempty"`

	Intervals []Interval     `json:"intervals"`
	Streams   []StreamResult `json:"streams"`
	// Upload is the client-to-server direction, Download server-to-client.
	Upload   *Summary       `json:"upload,omitempty"`
	Download *Summary       `json:"download,omitempty"`
	CPU      CPUUtilization `json:"cpu_utilization_percent"`

	// UDPOffload says which UDP fast paths this side used: "gso", "gro",
	// "gso+gro" or "none" (linux only; elsewhere a note says why).
	UDPOffload string `json:"udp_offload,omitempty"`

	// Notes say which measurements were not available and why (for example
	// "tcp_info: not available on this platform").
	Notes []string `json:"notes,omitempty"`

	// ServerOutputJSON and ServerOutputText are what the server sent back
	// with get_server_output.
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText string          `json:"server_output_text,omitempty"`

	// ControlMSS is the control connection's TCP MSS (linux; 0 elsewhere),
	// iperf3's tcp_mss_default.
	ControlMSS int `json:"control_mss,omitempty"`
}

// Total sums every stream of the test, whichever way the data flowed:
// Upload for a forward test, Download for a reverse one (Config.Reverse),
// both for a bidirectional one. Read it when the direction does not
// matter. Sent.Retransmits is -1 when either direction's is unknown,
// Received.Jitter is the streams' mean, SenderLimited and QueueLimited say
// whether either direction's sender fell short or was held by its host.
// Limits is the sending direction's in a one-way test; in a bidirectional
// one it combines both directions' as Summary.Limits combines streams (the
// time fractions averaged over every stream, the retransmitted fraction
// weighted by the bytes each direction sent, the delivery rates summed),
// and is nil when either direction's is unknown (a stock iperf3 peer sends
// none). A nil Result or one without streams gives the zero Summary.
func (r *Result) Total() Summary {
	var t Summary
	if r == nil {
		return t
	}
	var jitter time.Duration
	n := 0
	for _, s := range []*Summary{r.Upload, r.Download} {
		if s == nil {
			continue
		}
		if n == 0 {
			t.Sent.Retransmits = s.Sent.Retransmits
		} else if t.Sent.Retransmits < 0 || s.Sent.Retransmits < 0 {
			t.Sent.Retransmits = -1
		} else {
			t.Sent.Retransmits += s.Sent.Retransmits
		}
		n++
		t.Streams += s.Streams
		t.SenderLimited = t.SenderLimited || s.SenderLimited
		t.QueueLimited = t.QueueLimited || s.QueueLimited
		t.Duration = max(t.Duration, s.Duration)
		for _, p := range [][2]*Counts{{&t.Sent, &s.Sent}, {&t.Received, &s.Received}} {
			p[0].Bytes += p[1].Bytes
			p[0].BitsPerSecond += p[1].BitsPerSecond
			p[0].Packets += p[1].Packets
			p[0].LostPackets += p[1].LostPackets
			p[0].OutOfOrder += p[1].OutOfOrder
			p[0].LocalDrops += p[1].LocalDrops
			p[0].LocalRetries += p[1].LocalRetries
		}
		jitter += s.Received.Jitter * time.Duration(s.Streams)
	}
	if t.Streams > 0 {
		t.Received.Jitter = jitter / time.Duration(t.Streams)
	}
	t.Received.LostPercent = Percent(t.Received.LostPackets, t.Received.Packets)
	t.Limits = totalLimits(r.Upload, r.Download)
	return t
}

// totalLimits is Total's Limits: the one direction's (a copy), or both
// combined, nil when a direction that has streams has no limits.
func totalLimits(up, down *Summary) *TCPLimits {
	var ls []*TCPLimits
	var streams, sent []int64
	for _, s := range []*Summary{up, down} {
		if s != nil {
			ls = append(ls, s.Limits)
			streams, sent = append(streams, int64(s.Streams)), append(sent, s.Sent.Bytes)
		}
	}
	if len(ls) == 1 {
		if ls[0] == nil {
			return nil
		}
		l := *ls[0]
		return &l
	}
	return WeighLimits(ls, streams, sent)
}
