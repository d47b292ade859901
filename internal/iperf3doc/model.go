package iperf3doc

import (
	"encoding/json"
	"time"
)

// The model holds what the renderers read of package throughput's types of
// the same names, under the same JSON keys; throughput's documentation
// says what each field means.

// Counts is throughput.Counts.
type Counts struct {
	Bytes         int64         `json:"bytes"`
	BitsPerSecond float64       `json:"bits_per_second"`
	Retransmits   int64         `json:"retransmits"`
	Packets       int64         `json:"packets"`
	LostPackets   int64         `json:"lost_packets"`
	LostPercent   float64       `json:"lost_percent"`
	OutOfOrder    int64         `json:"out_of_order"`
	Jitter        time.Duration `json:"jitter_ns"`
	LocalDrops    int64         `json:"local_drops,omitempty"`
	LocalRetries  int64         `json:"local_retries,omitempty"`
}

// Interval is throughput.Interval.
type Interval struct {
	Start    time.Duration    `json:"start_ns"`
	End      time.Duration    `json:"end_ns"`
	Omitted  bool             `json:"omitted"`
	Streams  []StreamInterval `json:"streams"`
	Upload   *Counts          `json:"upload,omitempty"`
	Download *Counts          `json:"download,omitempty"`
}

// StreamInterval is throughput.StreamInterval.
type StreamInterval struct {
	Counts
	ID      int        `json:"id"`
	Sender  bool       `json:"sender"`
	Reverse bool       `json:"reverse"`
	TCP     *TCPInfo   `json:"tcp_info,omitempty"`
	Limits  *TCPLimits `json:"tcp_limits,omitempty"`
}

// TCPInfo is throughput.TCPInfo.
type TCPInfo struct {
	SndCwndBytes int64         `json:"snd_cwnd_bytes"`
	RTT          time.Duration `json:"rtt_ns"`
	RTTVar       time.Duration `json:"rttvar_ns"`
	PMTU         int64         `json:"pmtu,omitempty"`
	SndWndBytes  int64         `json:"snd_wnd_bytes,omitempty"`
	ReorderSeen  int64         `json:"reorder_seen,omitempty"`
}

// TCPLimits is throughput.TCPLimits. The -J document carries it as
// throughput encodes it, under these keys.
type TCPLimits struct {
	Busy          float64 `json:"busy_fraction"`
	RwndLimited   float64 `json:"rwnd_limited_fraction"`
	SndbufLimited float64 `json:"sndbuf_limited_fraction"`
	Retransmitted float64 `json:"retransmitted_fraction"`
	DeliveryRate  float64 `json:"delivery_rate_bits_per_second"`
}

// Totals is throughput.Totals.
type Totals struct {
	Duration time.Duration `json:"duration_ns"`
	Sent     Counts        `json:"sent"`
	Received Counts        `json:"received"`
}

// StreamResult is throughput.StreamResult.
type StreamResult struct {
	Totals
	ID         int        `json:"id"`
	LocalAddr  string     `json:"local_addr,omitempty"`
	RemoteAddr string     `json:"remote_addr,omitempty"`
	Reverse    bool       `json:"reverse"`
	Limits     *TCPLimits `json:"tcp_limits,omitempty"`
}

// Summary is throughput.Summary.
type Summary struct {
	Totals
	Streams       int        `json:"streams"`
	SenderLimited bool       `json:"sender_limited"`
	Limits        *TCPLimits `json:"tcp_limits,omitempty"`
	QueueLimited  bool       `json:"queue_limited,omitempty"`
	Ledger        *Ledger    `json:"loss_ledger,omitempty"`
}

// Ledger is throughput.Ledger. The -J document carries it as throughput
// encodes it, under these keys (end.sum.loss_ledger).
type Ledger struct {
	Offered      int64        `json:"offered"`
	Lines        []LedgerLine `json:"lines"`
	Received     int64        `json:"received"`
	Reordered    int64        `json:"reordered"`
	Duplicated   *int64       `json:"duplicated"`
	Retried      int64        `json:"retried,omitempty"`
	Disagreement string       `json:"disagreement,omitempty"`
}

// LedgerLine is throughput.LedgerLine.
type LedgerLine struct {
	Name    string `json:"name"`
	Count   *int64 `json:"count"`
	Counter *int64 `json:"counter,omitempty"`
	Scope   string `json:"scope"`
	Source  string `json:"source"`
	Unknown string `json:"unknown,omitempty"`
}

// CPUUtilization is throughput.CPUUtilization, written to the -J
// document under these keys.
type CPUUtilization struct {
	HostTotal    float64 `json:"host_total"`
	HostUser     float64 `json:"host_user"`
	HostSystem   float64 `json:"host_system"`
	RemoteTotal  float64 `json:"remote_total"`
	RemoteUser   float64 `json:"remote_user"`
	RemoteSystem float64 `json:"remote_system"`
}

// OffloadOn is throughput.OffloadOn, the value of Config.GSO and GRO
// that asks for the offload.
const OffloadOn = 1

// Config is the part of throughput.Config the renderers read, with the
// fields of its SocketOptions and Iperf3Options, which its JSON form
// promotes.
type Config struct {
	UDP       bool          `json:"udp"`
	Streams   int           `json:"streams"`
	Duration  time.Duration `json:"duration_ns"`
	Bytes     int64         `json:"bytes"`
	Blocks    int64         `json:"blocks"`
	Reverse   bool          `json:"reverse"`
	Bidir     bool          `json:"bidir"`
	BlockLen  int           `json:"block_len_bytes"`
	Bitrate   float64       `json:"bitrate_bits_per_second"`
	Omit      time.Duration `json:"omit_ns"`
	Interval  time.Duration `json:"interval_ns"`
	Window    int           `json:"window_bytes,omitempty"`
	MSS       int           `json:"mss,omitempty"`
	TOS       int           `json:"tos,omitempty"`
	FQRate    float64       `json:"fq_rate_bits_per_second,omitempty"`
	GSO       int8          `json:"gso,omitempty"`
	GRO       int8          `json:"gro,omitempty"`
	ExtraData string        `json:"extra_data,omitempty"`
}

// rate is the per-stream target in bits/s, 0 when unlimited.
func (c *Config) rate() float64 {
	if c.Bitrate > 0 {
		return c.Bitrate
	}
	return 0
}

// Result is throughput.Result.
type Result struct {
	Role             string          `json:"role"`
	Config           Config          `json:"config"`
	RemoteAddr       string          `json:"remote_addr"`
	Cookie           string          `json:"cookie"`
	Start            time.Time       `json:"start"`
	SndBufActual     int             `json:"sndbuf_actual,omitempty"`
	RcvBufActual     int             `json:"rcvbuf_actual,omitempty"`
	Congestion       string          `json:"congestion,omitempty"`
	RemoteCongestion string          `json:"remote_congestion,omitempty"`
	Intervals        []Interval      `json:"intervals"`
	Streams          []StreamResult  `json:"streams"`
	Upload           *Summary        `json:"upload,omitempty"`
	Download         *Summary        `json:"download,omitempty"`
	CPU              CPUUtilization  `json:"cpu_utilization_percent"`
	Notes            []string        `json:"notes,omitempty"`
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText string          `json:"server_output_text,omitempty"`
	ControlMSS       int             `json:"control_mss,omitempty"`
}

// From returns v, one of throughput's Result, Config, Interval or
// StreamResult, as the model's T of the same name: see the package
// documentation for why through JSON. The error is the encoder's, for a
// NaN or infinite figure.
func From[T any](v any) (T, error) {
	var m T
	b, err := json.Marshal(v)
	if err != nil {
		return m, err
	}
	err = json.Unmarshal(b, &m)
	return m, err
}
