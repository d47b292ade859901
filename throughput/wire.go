package throughput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// wireInt decodes an iperf3 JSON number into an int64. iperf3 3.12 and 3.13
// print -1 as 18446744073709551615, so values of 2^63 and above wrap to the
// negative number they stand for; fractions are truncated.
type wireInt int64

// UnmarshalJSON accepts integers, unsigned integers up to 2^64-1, floats and null.
func (w *wireInt) UnmarshalJSON(b []byte) error {
	v, err := parseWireInt(b)
	if err != nil {
		return err
	}
	*w = wireInt(v)
	return nil
}

func parseWireInt(b []byte) (int64, error) {
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

// wireFloat decodes a JSON number (or null) as float64, mapping unsigned -1 to -1.
type wireFloat float64

// UnmarshalJSON accepts any JSON number or null.
func (w *wireFloat) UnmarshalJSON(b []byte) error {
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
	*w = wireFloat(f)
	return nil
}

// flag is an iperf3 boolean parameter: iperf3 only checks that the key is
// present, whatever its value, and so does flag when decoding.
type flag bool

// UnmarshalJSON sets the flag for any value, as iperf3's cJSON_GetObjectItem check does.
func (f *flag) UnmarshalJSON([]byte) error {
	*f = true
	return nil
}

// params is the parameter object an iperf3 client sends after PARAM_EXCHANGE.
// Keys follow iperf3 3.12; unknown keys are ignored.
type params struct {
	TCP              flag    `json:"tcp,omitempty"`
	UDP              flag    `json:"udp,omitempty"`
	Omit             wireInt `json:"omit"`
	Time             wireInt `json:"time"`
	Num              wireInt `json:"num"`
	BlockCount       wireInt `json:"blockcount"`
	MSS              wireInt `json:"MSS,omitempty"`
	NoDelay          flag    `json:"nodelay,omitempty"`
	Parallel         wireInt `json:"parallel"`
	Reverse          flag    `json:"reverse,omitempty"`
	Bidirectional    flag    `json:"bidirectional,omitempty"`
	Window           wireInt `json:"window,omitempty"`
	Len              wireInt `json:"len,omitempty"`
	Bandwidth        wireInt `json:"bandwidth,omitempty"`
	FQRate           wireInt `json:"fqrate,omitempty"`
	PacingTimer      wireInt `json:"pacing_timer,omitempty"`
	Burst            wireInt `json:"burst,omitempty"`
	TOS              wireInt `json:"TOS,omitempty"`
	FlowLabel        wireInt `json:"flowlabel,omitempty"`
	Title            string  `json:"title,omitempty"`
	ExtraData        string  `json:"extra_data,omitempty"`
	Congestion       string  `json:"congestion,omitempty"`
	GetServerOutput  wireInt `json:"get_server_output,omitempty"`
	UDPCounters64    wireInt `json:"udp_counters_64bit,omitempty"`
	RepeatingPayload wireInt `json:"repeating_payload,omitempty"`
	JSONOutput       flag    `json:"json_output,omitempty"`
	ClientVersion    string  `json:"client_version,omitempty"`
	// Interval is this package's addition: the client's report interval in
	// seconds, so that a netperfkit server's output lines up with the
	// client's intervals. iperf3 ignores the key.
	Interval float64 `json:"netperfkit_interval,omitempty"`
}

// decodeParams parses a parameter object. It checks syntax only; limits are
// the server's business (see ServerConfig).
func decodeParams(b []byte) (*params, error) {
	var p params
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: parameters: %v", ErrProtocol, err)
	}
	return &p, nil
}

// wireResults is the results object each side sends during EXCHANGE_RESULTS.
type wireResults struct {
	CPUUtilTotal         *wireFloat      `json:"cpu_util_total"`
	CPUUtilUser          *wireFloat      `json:"cpu_util_user"`
	CPUUtilSystem        *wireFloat      `json:"cpu_util_system"`
	SenderHasRetransmits *wireInt        `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	ServerOutputJSON     json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText     string          `json:"server_output_text,omitempty"`
	Streams              []wireStream    `json:"streams"`
}

// wireStream is one stream of a results object.
type wireStream struct {
	ID             *wireInt   `json:"id"`
	Bytes          *wireInt   `json:"bytes"`
	Retransmits    *wireInt   `json:"retransmits"`
	Jitter         *wireFloat `json:"jitter"`
	Errors         *wireInt   `json:"errors"`
	OmittedErrors  *wireInt   `json:"omitted_errors,omitempty"`
	Packets        *wireInt   `json:"packets"`
	OmittedPackets *wireInt   `json:"omitted_packets,omitempty"`
	// OutOfOrder is this package's addition (iperf3 ignores unknown keys).
	OutOfOrder *wireInt  `json:"out_of_order,omitempty"`
	StartTime  wireFloat `json:"start_time"`
	EndTime    wireFloat `json:"end_time"`
}

// decodeResults parses a results object and checks that the keys iperf3
// requires are present.
func decodeResults(b []byte) (*wireResults, error) {
	var r wireResults
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
	}
	return &r, nil
}

func ptrInt(v int64) *wireInt       { w := wireInt(v); return &w }
func ptrFloat(v float64) *wireFloat { w := wireFloat(v); return &w }
