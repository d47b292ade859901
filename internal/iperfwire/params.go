package iperfwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Int decodes an iperf3 JSON number into an int64. iperf3 3.12 and 3.13
// print -1 as 18446744073709551615, so values of 2^63 and above wrap to the
// negative number they stand for; fractions are truncated.
type Int int64

// UnmarshalJSON accepts integers, unsigned integers up to 2^64-1, floats and null.
func (w *Int) UnmarshalJSON(b []byte) error {
	v, err := parseInt(b)
	if err != nil {
		return err
	}
	*w = Int(v)
	return nil
}

func parseInt(b []byte) (int64, error) {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		return 0, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u), nil // two's complement: 2^64-1 -> -1
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: not a number: %.40q", ErrProtocol, s)
	}
	switch {
	case f >= 1<<63:
		// A float spelling of an unsigned -1 (or -n) rounds to 2^64; small
		// negatives are all that iperf3 ever encodes this way.
		v := int64(math.Round(f - (1 << 64)))
		if v == 0 || f >= 1<<64 {
			v = -1
		}
		return v, nil
	case f <= -(1 << 63):
		return math.MinInt64, nil
	}
	return int64(f), nil
}

// Float decodes a JSON number (or null) as float64, mapping unsigned -1 to -1.
type Float float64

// UnmarshalJSON accepts any JSON number or null.
func (w *Float) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		*w = 0
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%w: not a number: %.40q", ErrProtocol, s)
	}
	if f >= 1<<63 {
		f = -1
	}
	*w = Float(f)
	return nil
}

// Flag is an iperf3 boolean parameter: iperf3 only checks that the key is
// present, whatever its value, and so does Flag when decoding.
type Flag bool

// UnmarshalJSON sets the Flag for any value, as iperf3's cJSON_GetObjectItem check does.
func (f *Flag) UnmarshalJSON([]byte) error {
	*f = true
	return nil
}

// Params is the parameter object an iperf3 client sends after PARAM_EXCHANGE.
// Keys follow iperf3 3.12 and 3.21; unknown keys are ignored.
type Params struct {
	TCP              Flag   `json:"tcp,omitempty"`
	UDP              Flag   `json:"udp,omitempty"`
	Omit             Int    `json:"omit"`
	Time             Int    `json:"time"`
	Num              Int    `json:"num"`
	BlockCount       Int    `json:"blockcount"`
	MSS              Int    `json:"MSS,omitempty"`
	NoDelay          Flag   `json:"nodelay,omitempty"`
	Parallel         Int    `json:"parallel"`
	Reverse          Flag   `json:"reverse,omitempty"`
	Bidirectional    Flag   `json:"bidirectional,omitempty"`
	Window           Int    `json:"window,omitempty"`
	Len              Int    `json:"len,omitempty"`
	Bandwidth        Int    `json:"bandwidth,omitempty"`
	FQRate           Int    `json:"fqrate,omitempty"`
	PacingTimer      Int    `json:"pacing_timer,omitempty"`
	Burst            Int    `json:"burst,omitempty"`
	TOS              Int    `json:"TOS,omitempty"`
	FlowLabel        Int    `json:"flowlabel,omitempty"`
	Title            string `json:"title,omitempty"`
	ExtraData        string `json:"extra_data,omitempty"`
	Congestion       string `json:"congestion,omitempty"`
	GetServerOutput  Int    `json:"get_server_output,omitempty"`
	UDPCounters64    Int    `json:"udp_counters_64bit,omitempty"`
	RepeatingPayload Int    `json:"repeating_payload,omitempty"`
	DontFragment     Int    `json:"dont_fragment,omitempty"`
	JSONOutput       Flag   `json:"json_output,omitempty"`
	ClientVersion    string `json:"client_version,omitempty"`
	// AuthToken is iperf3's RSA credential token (see internal/iperfauth).
	AuthToken string `json:"authtoken,omitempty"`
	// Keys of iperf3 3.14-3.21 (send_parameters in iperf_api.c). A 3.21
	// client sends gso, gso_dg_size, gso_bf_size, gro and gro_bf_size
	// with every UDP test, 0 when off; nil means the key was absent.
	GSO            *Int   `json:"gso,omitempty"`
	GSODgSize      Int    `json:"gso_dg_size,omitempty"`
	GSOBfSize      Int    `json:"gso_bf_size,omitempty"`
	GRO            *Int   `json:"gro,omitempty"`
	GROBfSize      Int    `json:"gro_bf_size,omitempty"`
	ZeroCopy       Int    `json:"zerocopy,omitempty"`
	SkipRxCopy     Int    `json:"skip_rx_copy,omitempty"`
	ServerAffinity *Int   `json:"server_affinity,omitempty"`
	MPTCP          Flag   `json:"mptcp,omitempty"`
	SCTP           Flag   `json:"sctp,omitempty"`
	CongestionUsed string `json:"congestion_used,omitempty"`
	// Interval is this package's addition: the client's report interval in
	// seconds, so that a netperfkit server's output lines up with the
	// client's intervals. iperf3 ignores the key.
	Interval float64 `json:"netperfkit_interval,omitempty"`
	// KeepRate is this package's addition too: the client asks a server
	// that sends UDP to it (reverse, bidir) to drop what its host refuses
	// and keep the target rate (throughput.Config.UDPKeepRate). iperf3
	// ignores the key.
	KeepRate Flag `json:"netperfkit_keep_rate,omitempty"`
}

// DecodeParams parses a parameter object. It checks syntax only; limits are
// the server's business (see ServerConfig).
func DecodeParams(b []byte) (*Params, error) {
	var p Params
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: parameters: %v", ErrProtocol, err)
	}
	return &p, nil
}

// Results is the results object each side sends during EXCHANGE_RESULTS.
type Results struct {
	CPUUtilTotal         *Float          `json:"cpu_util_total"`
	CPUUtilUser          *Float          `json:"cpu_util_user"`
	CPUUtilSystem        *Float          `json:"cpu_util_system"`
	SenderHasRetransmits *Int            `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	ServerOutputJSON     json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText     string          `json:"server_output_text,omitempty"`
	Streams              []Stream        `json:"streams"`
	// LossCounters is this package's addition (iperf3 ignores unknown
	// keys): the sending side's interface- and host-wide drop counters
	// over the test (throughput.Ledger), which only its host can read.
	LossCounters json.RawMessage `json:"loss_counters,omitempty"`
}

// Stream is one stream of a results object.
type Stream struct {
	ID             *Int   `json:"id"`
	Bytes          *Int   `json:"bytes"`
	Retransmits    *Int   `json:"retransmits"`
	Jitter         *Float `json:"jitter"`
	Errors         *Int   `json:"errors"`
	OmittedErrors  *Int   `json:"omitted_errors,omitempty"`
	Packets        *Int   `json:"packets"`
	OmittedPackets *Int   `json:"omitted_packets,omitempty"`
	// OutOfOrder is this package's addition (iperf3 ignores unknown keys).
	OutOfOrder *Int  `json:"out_of_order,omitempty"`
	StartTime  Float `json:"start_time"`
	EndTime    Float `json:"end_time"`
	// TCPLimits is this package's addition too: what held the TCP sender
	// back (throughput.TCPLimits), which only the sender's kernel knows.
	TCPLimits json.RawMessage `json:"tcp_limits,omitempty"`
	// LocalDrops and LocalRetries are this package's additions as well: the
	// UDP datagrams the sender's own host refused (throughput.Counts),
	// dropped or waited for, which only the sender knows. Written only when
	// non-zero, so a clean run's results are as iperf3 writes them.
	LocalDrops   *Int `json:"local_drops,omitempty"`
	LocalRetries *Int `json:"local_retries,omitempty"`
	// LossLedger is a UDP receiver's addition: the distinct datagrams it
	// read, the duplicates, and its socket's drop counter
	// (throughput.Ledger).
	LossLedger json.RawMessage `json:"loss_ledger,omitempty"`
}

// DecodeResults parses a results object and checks that the keys iperf3
// requires are present.
func DecodeResults(b []byte) (*Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: results: %v", ErrProtocol, err)
	}
	if r.CPUUtilTotal == nil || r.CPUUtilUser == nil || r.CPUUtilSystem == nil || r.SenderHasRetransmits == nil {
		return nil, fmt.Errorf("%w: results lack cpu_util_* or sender_has_retransmits", ErrProtocol)
	}
	if r.Streams == nil {
		return nil, fmt.Errorf("%w: results lack streams", ErrProtocol)
	}
	for i, s := range r.Streams {
		if s.ID == nil || s.Bytes == nil || s.Retransmits == nil || s.Jitter == nil || s.Errors == nil || s.Packets == nil {
			return nil, fmt.Errorf("%w: results stream %d lacks a required key", ErrProtocol, i)
		}
		if (s.OmittedErrors == nil) != (s.OmittedPackets == nil) {
			return nil, fmt.Errorf("%w: results stream %d has only one of omitted_errors/omitted_packets", ErrProtocol, i)
		}
		if (s.LocalDrops != nil && *s.LocalDrops < 0) || (s.LocalRetries != nil && *s.LocalRetries < 0) {
			return nil, fmt.Errorf("%w: results stream %d has a negative local_drops or local_retries", ErrProtocol, i)
		}
	}
	return &r, nil
}

func PtrInt(v int64) *Int       { w := Int(v); return &w }
func PtrFloat(v float64) *Float { w := Float(v); return &w }
