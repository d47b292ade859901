package throughput

import (
	"encoding/json"

	"github.com/netperfkit/netperfkit/latency"
)

// Interval is one interval report. Times are seconds since the test started
// (including omitted seconds); Omitted marks intervals inside the omit period.
type Interval struct {
	StartSeconds float64          `json:"start_seconds"`
	EndSeconds   float64          `json:"end_seconds"`
	Omitted      bool             `json:"omitted"`
	Streams      []StreamInterval `json:"streams"`
	// Upload sums the client-to-server streams, Download the server-to-client
	// ones; a direction without streams is nil.
	Upload   *IntervalSum `json:"upload,omitempty"`
	Download *IntervalSum `json:"download,omitempty"`
}

// StreamInterval is one stream's share of an interval, seen from the side
// that reports it. TCP fields are filled for sending streams where TCP_INFO
// exists (linux); for streams the server sends, the client fills them from
// the server's output after the test (Result.Intervals only, not live).
type StreamInterval struct {
	ID            int     `json:"id"`
	Sender        bool    `json:"sender"`  // the reporting side sends on this stream
	Reverse       bool    `json:"reverse"` // data flows server to client
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// TCP sender statistics (TCP_INFO); TCPInfo is false when unknown.
	TCPInfo      bool  `json:"tcp_info"`
	Retransmits  int64 `json:"retransmits"`
	SndCwndBytes int64 `json:"snd_cwnd_bytes"`
	RTTUs        int64 `json:"rtt_us"`
	RTTVarUs     int64 `json:"rttvar_us"`
	PMTU         int64 `json:"pmtu"`
	// UDP.
	Packets     int64   `json:"packets"`
	LostPackets int64   `json:"lost_packets"`
	LostPercent float64 `json:"lost_percent"`
	OutOfOrder  int64   `json:"out_of_order"`
	JitterMs    float64 `json:"jitter_ms"`
}

// IntervalSum sums the streams of one direction in an interval.
type IntervalSum struct {
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   int64   `json:"retransmits"`
	Packets       int64   `json:"packets"`
	LostPackets   int64   `json:"lost_packets"`
	LostPercent   float64 `json:"lost_percent"`
	JitterMs      float64 `json:"jitter_ms"`
}

// StreamResult is the final result of one stream with both ends' numbers.
type StreamResult struct {
	ID         int     `json:"id"`
	LocalAddr  string  `json:"local_addr,omitempty"`
	RemoteAddr string  `json:"remote_addr,omitempty"`
	Reverse    bool    `json:"reverse"` // data flowed server to client
	Seconds    float64 `json:"seconds"`
	// SentBytes is what the sender wrote, ReceivedBytes what the receiver read
	// (both after the omit period).
	SentBytes             int64   `json:"sent_bytes"`
	ReceivedBytes         int64   `json:"received_bytes"`
	SentBitsPerSecond     float64 `json:"sent_bits_per_second"`
	ReceivedBitsPerSecond float64 `json:"received_bits_per_second"`
	// Retransmits is the sender's TCP retransmit count, -1 when unknown.
	Retransmits int64 `json:"retransmits"`
	// Final TCP_INFO of the sender when it is local (linux).
	SndCwndBytes int64 `json:"snd_cwnd_bytes,omitempty"`
	RTTUs        int64 `json:"rtt_us,omitempty"`
	RTTVarUs     int64 `json:"rttvar_us,omitempty"`
	// Per-interval TCP_INFO extremes of the sender (from the server's output
	// when the server sends and is a netperfkit server).
	MaxSndCwndBytes int64 `json:"max_snd_cwnd_bytes,omitempty"`
	MaxRTTUs        int64 `json:"max_rtt_us,omitempty"`
	MinRTTUs        int64 `json:"min_rtt_us,omitempty"`
	MeanRTTUs       int64 `json:"mean_rtt_us,omitempty"`
	// UDP: datagrams the receiver expected (highest counter), lost and out of order.
	SentPackets int64   `json:"sent_packets,omitempty"`
	Packets     int64   `json:"packets,omitempty"`
	LostPackets int64   `json:"lost_packets,omitempty"`
	LostPercent float64 `json:"lost_percent,omitempty"`
	OutOfOrder  int64   `json:"out_of_order,omitempty"`
	JitterMs    float64 `json:"jitter_ms,omitempty"`
}

// Summary sums the streams of one direction of a test.
type Summary struct {
	Streams               int     `json:"streams"`
	Seconds               float64 `json:"seconds"`
	SentBytes             int64   `json:"sent_bytes"`
	ReceivedBytes         int64   `json:"received_bytes"`
	SentBitsPerSecond     float64 `json:"sent_bits_per_second"`
	ReceivedBitsPerSecond float64 `json:"received_bits_per_second"`
	Retransmits           int64   `json:"retransmits"` // -1 when unknown
	SentPackets           int64   `json:"sent_packets,omitempty"`
	Packets               int64   `json:"packets,omitempty"`
	LostPackets           int64   `json:"lost_packets,omitempty"`
	LostPercent           float64 `json:"lost_percent,omitempty"`
	OutOfOrder            int64   `json:"out_of_order,omitempty"`
	JitterMs              float64 `json:"jitter_ms,omitempty"`
	// TargetBitsPerSecond is the requested UDP or paced rate per direction
	// (streams x per-stream rate), 0 when unlimited.
	TargetBitsPerSecond float64 `json:"target_bits_per_second,omitempty"`
	// SenderLimited is true when the sender did not reach the target rate:
	// the generator, not the network, was the bottleneck.
	SenderLimited bool `json:"sender_limited"`
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

// Result is the outcome of a test, from the side that ran it (Role).
type Result struct {
	Role       string `json:"role"`     // "client" or "server"
	Protocol   string `json:"protocol"` // "tcp" or "udp"
	LocalAddr  string `json:"local_addr"`
	RemoteAddr string `json:"remote_addr"`
	Cookie     string `json:"cookie"`
	// PeerVersion is the client_version the client sent (server side) or "" .
	PeerVersion string `json:"peer_version,omitempty"`
	StartUnix   int64  `json:"start_unix"`

	NumStreams      int     `json:"num_streams"`
	BlockLen        int     `json:"block_len_bytes"`
	DurationSeconds float64 `json:"duration_seconds"`
	OmitSeconds     float64 `json:"omit_seconds"`
	Bytes           int64   `json:"bytes"`
	Blocks          int64   `json:"blocks"`
	Reverse         bool    `json:"reverse"`
	Bidir           bool    `json:"bidir"`
	// BitrateBitsPerSecond is the per-stream target (0 = unlimited).
	BitrateBitsPerSecond float64 `json:"bitrate_bits_per_second"`
	WindowBytes          int     `json:"window_bytes,omitempty"`
	MSS                  int     `json:"mss,omitempty"`
	SndBufActual         int     `json:"sndbuf_actual,omitempty"`
	RcvBufActual         int     `json:"rcvbuf_actual,omitempty"`
	Congestion           string  `json:"congestion,omitempty"`
	RemoteCongestion     string  `json:"remote_congestion,omitempty"`

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

	// Latency is the RTT distribution measured alongside the flows when
	// Config.Latency was set (client side only).
	Latency *latency.PingPongResult `json:"latency,omitempty"`
}
