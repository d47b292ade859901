package iperfwire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCookie(t *testing.T) {
	c, err := NewCookie()
	require.NoError(t, err)
	require.Len(t, c, CookieLen)
	assert.Equal(t, byte(0), c[36])
	for _, b := range c[:36] {
		assert.Contains(t, CookieChars, string(b))
	}
	d, err := NewCookie()
	require.NoError(t, err)
	assert.NotEqual(t, c, d)
	assert.Len(t, CookieString(c), 36)
}

func TestStateBytes(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range []State{ParamExchange, AccessDenied, ServerError, IperfDone} {
		require.NoError(t, WriteState(&buf, s, 0))
	}
	assert.Equal(t, []byte{9, 0xff, 0xfe, 16}, buf.Bytes())
	for _, want := range []State{ParamExchange, AccessDenied, ServerError, IperfDone} {
		got, err := ReadState(&buf, 0)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ReadState(&buf, 0)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "ACCESS_DENIED", AccessDenied.String())
	assert.Equal(t, "STATE(7)", State(7).String())
	assert.False(t, State(7).Known())
	assert.True(t, TestEnd.Known())
}

func TestServerErrorCodes(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteServerError(&buf, 101, -98, 0))
	s, err := ReadState(&buf, 0)
	require.NoError(t, err)
	require.Equal(t, ServerError, s)
	ie, en, err := ReadServerError(&buf, 0)
	require.NoError(t, err)
	assert.Equal(t, 101, ie)
	assert.Equal(t, -98, en)
	_, _, err = ReadServerError(&buf, 0)
	assert.ErrorIs(t, err, io.EOF)
}

func TestJSONFraming(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, []byte(`{"a":1}`), 0))
	assert.Equal(t, []byte{0, 0, 0, 7}, buf.Bytes()[:4])
	got, err := ReadJSON(&buf, 100, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(got))

	_, err = ReadJSON(bytes.NewReader([]byte{0, 0, 0, 0}), 100, 0)
	assert.ErrorIs(t, err, ErrProtocol)
	_, err = ReadJSON(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 8192, 0)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorIs(t, err, ErrProtocol, "too large is a protocol violation too")
	_, err = ReadJSON(bytes.NewReader([]byte{0, 0, 0, 9, '{'}), 8192, 0)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, WriteJSON(&buf, nil, 0), ErrProtocol)
}

func TestHello(t *testing.T) {
	assert.True(t, IsConnectMsg(Hello()))
	assert.True(t, IsConnectReply(HelloReply()))
	assert.Equal(t, []byte("9876"), Hello())
	be := make([]byte, 4)
	binary.BigEndian.PutUint32(be, legacyConnectMsg)
	assert.True(t, IsConnectMsg(be))
	assert.False(t, IsConnectMsg([]byte("98765")))
}

func TestWireIntUnsignedMinusOne(t *testing.T) {
	cases := map[string]int64{
		"18446744073709551615":  -1,
		"18446744073709551614":  -2,
		"1.8446744073709552e19": -1,
		"-1":                    -1,
		"42":                    42,
		"1e6":                   1000000,
		"3.9":                   3,
		"null":                  0,
		"9223372036854775807":   9223372036854775807,
	}
	for in, want := range cases {
		var w Int
		require.NoError(t, json.Unmarshal([]byte(in), &w), in)
		assert.Equal(t, want, int64(w), in)
	}
	var w Int
	assert.ErrorIs(t, w.UnmarshalJSON([]byte(`"x"`)), ErrProtocol)
	var f Float
	require.NoError(t, json.Unmarshal([]byte("18446744073709551615"), &f))
	assert.Equal(t, -1.0, float64(f))
}

// A results object as iperf3 3.12 sends it from a UDP receiver, with the
// unsigned -1 for retransmits and sender_has_retransmits.
const results312 = `{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1,` +
	`"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":1250000,` +
	`"retransmits":18446744073709551615,"jitter":0.000123,"errors":2,"omitted_errors":0,` +
	`"packets":1000,"omitted_packets":0,"start_time":0,"end_time":2.000041}]}`

func TestDecodeResults312(t *testing.T) {
	r, err := DecodeResults([]byte(results312))
	require.NoError(t, err)
	assert.Equal(t, int64(-1), int64(*r.SenderHasRetransmits))
	require.Len(t, r.Streams, 1)
	s := r.Streams[0]
	assert.Equal(t, int64(-1), int64(*s.Retransmits))
	assert.Equal(t, int64(1250000), int64(*s.Bytes))
	assert.Equal(t, int64(2), int64(*s.Errors))
	assert.Equal(t, int64(1000), int64(*s.Packets))
	assert.InDelta(t, 0.000123, float64(*s.Jitter), 1e-12)
	assert.InDelta(t, 2.000041, float64(s.EndTime), 1e-12)

	for _, bad := range []string{
		`{}`, `[]`, `{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0}`,
		`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1}]}`,
		`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0,"omitted_errors":0}]}`,
	} {
		_, err := DecodeResults([]byte(bad))
		assert.ErrorIs(t, err, ErrProtocol, bad)
	}
}

func TestDecodeParams312(t *testing.T) {
	in := `{"udp":true,"omit":1,"time":2,"num":0,"blockcount":0,"parallel":1,"len":1200,` +
		`"bandwidth":5000000,"pacing_timer":1000,"get_server_output":1,"client_version":"3.12"}`
	p, err := DecodeParams([]byte(in))
	require.NoError(t, err)
	assert.True(t, bool(p.UDP))
	assert.False(t, bool(p.TCP))
	assert.Equal(t, Int(1), p.Omit)
	assert.Equal(t, Int(2), p.Time)
	assert.Equal(t, Int(1200), p.Len)
	assert.Equal(t, Int(5000000), p.Bandwidth)
	assert.Equal(t, Int(1), p.GetServerOutput)
	assert.Equal(t, "3.12", p.ClientVersion)
	// iperf3 tests presence only: "reverse":false still means reverse.
	p, err = DecodeParams([]byte(`{"tcp":true,"reverse":false,"parallel":2}`))
	require.NoError(t, err)
	assert.True(t, bool(p.Reverse))
	_, err = DecodeParams([]byte(`{"parallel":"x"}`))
	assert.ErrorIs(t, err, ErrProtocol)
}

// FuzzControlStream feeds arbitrary bytes to the control-message reader the
// server uses: a state byte or a length-prefixed JSON. It must never panic,
// never allocate beyond the limit and round-trip what it accepts.
func FuzzControlStream(f *testing.F) {
	f.Add([]byte{9})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 0})
	f.Add(append([]byte{0, 0, 1, byte(len(results312) - 256)}, results312...))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if s, err := ReadState(r, 0); err == nil {
			_ = s.String()
		}
		r = bytes.NewReader(b)
		js, err := ReadJSON(r, 4096, 0)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(js), 4096)
		var buf bytes.Buffer
		require.NoError(t, WriteJSON(&buf, js, 0))
		require.Equal(t, b[:4+len(js)], buf.Bytes())
	})
}

// FuzzDecodeResults checks that the results decoder never panics and that
// what it accepts re-encodes and decodes to the same values.
func FuzzDecodeResults(f *testing.F) {
	f.Add([]byte(results312))
	f.Add([]byte(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[]}`))
	f.Add([]byte(`{"streams":[{"id":1e400}]}`))
	f.Add([]byte(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":1,"local_drops":4,"local_retries":2}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResults(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(r)
		require.NoError(t, err)
		r2, err := DecodeResults(again)
		require.NoError(t, err)
		require.Equal(t, len(r.Streams), len(r2.Streams))
		for i := range r.Streams {
			require.Equal(t, *r.Streams[i].ID, *r2.Streams[i].ID)
			require.Equal(t, *r.Streams[i].Bytes, *r2.Streams[i].Bytes)
			require.Equal(t, r.Streams[i].LocalDrops, r2.Streams[i].LocalDrops)
			require.Equal(t, r.Streams[i].LocalRetries, r2.Streams[i].LocalRetries)
		}
	})
}

// FuzzDecodeParams checks the parameter decoder never panics and round-trips.
func FuzzDecodeParams(f *testing.F) {
	f.Add([]byte(`{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"client_version":"3.12"}`))
	f.Add([]byte(`{"udp":true,"len":1200,"bandwidth":18446744073709551615}`))
	f.Add([]byte(`{"parallel":1.5e300}`))
	f.Add([]byte(`{"parallel":1,"authtoken":"QUJD","TOS":32,"extra_data":"x","dont_fragment":1,"repeating_payload":1}`))
	f.Add([]byte(params321))
	f.Add([]byte(`{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":8,"len":131072,"fqrate":1000000000,"zerocopy":1,"skip_rx_copy":1,"dont_fragment":1,"server_affinity":0,"mptcp":true,"congestion_used":"cubic","client_version":"3.21"}`))
	f.Add([]byte(`{"udp":true,"gso":-1,"gso_dg_size":1e12,"gro":null,"gro_bf_size":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeParams(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		require.NoError(t, err)
		p2, err := DecodeParams(again)
		require.NoError(t, err)
		require.Equal(t, p.Parallel, p2.Parallel)
		require.Equal(t, p.Time, p2.Time)
		require.Equal(t, bool(p.Reverse), bool(p2.Reverse))
		require.Equal(t, p.AuthToken, p2.AuthToken)
		require.Equal(t, p.TOS, p2.TOS)
	})
}

// FuzzUDPHeader checks header parsing on arbitrary datagrams.
func FuzzUDPHeader(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), true)
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, c64 bool) {
		h, err := ParseUDPHeader(b, c64)
		if err != nil {
			require.Less(t, len(b), UDPHeaderLen(c64))
			return
		}
		out := make([]byte, UDPHeaderLen(c64))
		PutUDPHeader(out, h, c64)
		require.Equal(t, b[:len(out)], out)
	})
}

func TestUDPHeader(t *testing.T) {
	b := make([]byte, 16)
	PutUDPHeader(b, UDPHeader{Sec: 1, Usec: 2, Count: 1<<40 + 3}, true)
	h, err := ParseUDPHeader(b, true)
	require.NoError(t, err)
	assert.Equal(t, UDPHeader{Sec: 1, Usec: 2, Count: 1<<40 + 3}, h)
	assert.Equal(t, uint64(1<<40+3), binary.BigEndian.Uint64(b[8:]))
	_, err = ParseUDPHeader(b[:11], false)
	assert.ErrorIs(t, err, ErrProtocol)
}

// params321 is what an iperf3 3.21 client sends for -u -b 1G -l 1400
// --gsro --skip-rx-copy (send_parameters in iperf_api.c).
const params321 = `{"udp":true,"omit":0,"time":3,"num":0,"blockcount":0,"parallel":1,"len":1400,"bandwidth":1000000000,"pacing_timer":1000,"gso":1,"gso_dg_size":1400,"gso_bf_size":64400,"gro":1,"gro_bf_size":65507,"skip_rx_copy":1,"client_version":"3.21"}`

func TestDecodeParams321(t *testing.T) {
	p, err := DecodeParams([]byte(params321))
	require.NoError(t, err)
	require.NotNil(t, p.GSO)
	require.NotNil(t, p.GRO)
	assert.Equal(t, Int(1), *p.GSO)
	assert.Equal(t, Int(1), *p.GRO)
	assert.Equal(t, Int(1400), p.GSODgSize)
	assert.Equal(t, Int(64400), p.GSOBfSize)
	assert.Equal(t, Int(65507), p.GROBfSize)
	assert.Equal(t, Int(1), p.SkipRxCopy)
	assert.Equal(t, "3.21", p.ClientVersion)
	off, err := DecodeParams([]byte(`{"udp":true,"gso":0,"gro":0}`))
	require.NoError(t, err)
	require.NotNil(t, off.GSO, "a 0 is not an absent key")
	assert.Equal(t, Int(0), *off.GSO)
	old, err := DecodeParams([]byte(`{"udp":true}`))
	require.NoError(t, err)
	assert.Nil(t, old.GSO, "3.12 sends no gso")
	assert.Nil(t, old.GRO)
}
