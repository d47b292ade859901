package throughput

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"

	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCookie(t *testing.T) {
	c, err := newCookie()
	require.NoError(t, err)
	require.Len(t, c, CookieLen)
	assert.Equal(t, byte(0), c[36])
	for _, b := range c[:36] {
		assert.Contains(t, cookieChars, string(b))
	}
	d, err := newCookie()
	require.NoError(t, err)
	assert.NotEqual(t, c, d)
	assert.Len(t, cookieString(c), 36)
}

func TestStateBytes(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range []State{StateParamExchange, StateAccessDenied, StateServerError, StateIperfDone} {
		require.NoError(t, writeState(&buf, s, 0))
	}
	assert.Equal(t, []byte{9, 0xff, 0xfe, 16}, buf.Bytes())
	for _, want := range []State{StateParamExchange, StateAccessDenied, StateServerError, StateIperfDone} {
		got, err := readState(&buf, 0)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := readState(&buf, 0)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "ACCESS_DENIED", StateAccessDenied.String())
	assert.Equal(t, "STATE(7)", State(7).String())
	assert.False(t, State(7).Known())
}

func TestServerErrorCodes(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeServerError(&buf, 101, 98, 0))
	s, err := readState(&buf, 0)
	require.NoError(t, err)
	require.Equal(t, StateServerError, s)
	err = readServerError(&buf, 0)
	require.ErrorIs(t, err, ErrServerError)
	var se *ServerError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, 101, se.IErrno)
	assert.Equal(t, 98, se.Errno)
}

func TestJSONFraming(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeJSON(&buf, []byte(`{"a":1}`), 0))
	assert.Equal(t, []byte{0, 0, 0, 7}, buf.Bytes()[:4])
	got, err := readJSON(&buf, 100, 0)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(got))

	_, err = readJSON(bytes.NewReader([]byte{0, 0, 0, 0}), 100, 0)
	assert.ErrorIs(t, err, ErrProtocol)
	_, err = readJSON(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 8192, 0)
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = readJSON(bytes.NewReader([]byte{0, 0, 0, 9, '{'}), 8192, 0)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, writeJSON(&buf, nil, 0), ErrProtocol)
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
		var w wireInt
		require.NoError(t, json.Unmarshal([]byte(in), &w), in)
		assert.Equal(t, want, int64(w), in)
	}
	var w wireInt
	assert.ErrorIs(t, w.UnmarshalJSON([]byte(`"x"`)), ErrProtocol)
	var f wireFloat
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
	r, err := decodeResults([]byte(results312))
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
		_, err := decodeResults([]byte(bad))
		assert.ErrorIs(t, err, ErrProtocol, bad)
	}
}

func TestDecodeParams312(t *testing.T) {
	in := `{"udp":true,"omit":1,"time":2,"num":0,"blockcount":0,"parallel":1,"len":1200,` +
		`"bandwidth":5000000,"pacing_timer":1000,"get_server_output":1,"client_version":"3.12"}`
	p, err := decodeParams([]byte(in))
	require.NoError(t, err)
	assert.True(t, bool(p.UDP))
	assert.False(t, bool(p.TCP))
	assert.Equal(t, wireInt(1), p.Omit)
	assert.Equal(t, wireInt(2), p.Time)
	assert.Equal(t, wireInt(1200), p.Len)
	assert.Equal(t, wireInt(5000000), p.Bandwidth)
	assert.Equal(t, wireInt(1), p.GetServerOutput)
	assert.Equal(t, "3.12", p.ClientVersion)
	// iperf3 tests presence only: "reverse":false still means reverse.
	p, err = decodeParams([]byte(`{"tcp":true,"reverse":false,"parallel":2}`))
	require.NoError(t, err)
	assert.True(t, bool(p.Reverse))
	_, err = decodeParams([]byte(`{"parallel":"x"}`))
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
		if s, err := readState(r, 0); err == nil {
			_ = s.String()
		}
		r = bytes.NewReader(b)
		js, err := readJSON(r, 4096, 0)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(js), 4096)
		var buf bytes.Buffer
		require.NoError(t, writeJSON(&buf, js, 0))
		require.Equal(t, b[:4+len(js)], buf.Bytes())
	})
}

// FuzzDecodeResults checks that the results decoder never panics and that
// what it accepts re-encodes and decodes to the same values.
func FuzzDecodeResults(f *testing.F) {
	f.Add([]byte(results312))
	f.Add([]byte(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[]}`))
	f.Add([]byte(`{"streams":[{"id":1e400}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResults(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(r)
		require.NoError(t, err)
		r2, err := decodeResults(again)
		require.NoError(t, err)
		require.Equal(t, len(r.Streams), len(r2.Streams))
		for i := range r.Streams {
			require.Equal(t, *r.Streams[i].ID, *r2.Streams[i].ID)
			require.Equal(t, *r.Streams[i].Bytes, *r2.Streams[i].Bytes)
		}
	})
}

// FuzzDecodeParams checks the parameter decoder never panics and round-trips.
func FuzzDecodeParams(f *testing.F) {
	f.Add([]byte(`{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"client_version":"3.12"}`))
	f.Add([]byte(`{"udp":true,"len":1200,"bandwidth":18446744073709551615}`))
	f.Add([]byte(`{"parallel":1.5e300}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeParams(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		require.NoError(t, err)
		p2, err := decodeParams(again)
		require.NoError(t, err)
		require.Equal(t, p.Parallel, p2.Parallel)
		require.Equal(t, p.Time, p2.Time)
		require.Equal(t, bool(p.Reverse), bool(p2.Reverse))
	})
}

// FuzzUDPHeader checks header parsing on arbitrary datagrams.
func FuzzUDPHeader(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), true)
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, c64 bool) {
		h, err := parseUDPHeader(b, c64)
		if err != nil {
			require.Less(t, len(b), udpHeaderLen(c64))
			return
		}
		out := make([]byte, udpHeaderLen(c64))
		putUDPHeader(out, h, c64)
		require.Equal(t, b[:len(out)], out)
	})
}

func TestUDPHeader(t *testing.T) {
	b := make([]byte, 16)
	putUDPHeader(b, udpHeader{Sec: 1, Usec: 2, Count: 1<<40 + 3}, true)
	h, err := parseUDPHeader(b, true)
	require.NoError(t, err)
	assert.Equal(t, udpHeader{Sec: 1, Usec: 2, Count: 1<<40 + 3}, h)
	assert.Equal(t, uint64(1<<40+3), binary.BigEndian.Uint64(b[8:]))
	_, err = parseUDPHeader(b[:11], false)
	assert.ErrorIs(t, err, ErrProtocol)
}

// TestUDPAccounting feeds crafted sequences through iperf3's loss,
// out-of-order and jitter rules.
func TestUDPAccounting(t *testing.T) {
	var s udpRecvStats
	// 1,2,5,3,4,6: gap of 2 at 5 (errors 2), then 3 and 4 out of order
	// take them back.
	for _, c := range []uint64{1, 2, 5, 3, 4, 6} {
		s.add(c, 0, 0, 100)
	}
	assert.Equal(t, uint64(6), s.Highest)
	assert.Equal(t, int64(0), s.Errors)
	assert.Equal(t, int64(2), s.OutOfOrder)
	assert.Equal(t, int64(6), s.Datagrams)
	assert.Equal(t, int64(600), s.Bytes)

	// A true loss stays; a duplicate counts as out-of-order and takes one back.
	s = udpRecvStats{}
	for _, c := range []uint64{1, 2, 4, 5} {
		s.add(c, 0, 0, 1)
	}
	assert.Equal(t, int64(1), s.Errors)
	s.add(5, 0, 0, 1)
	assert.Equal(t, int64(0), s.Errors)
	assert.Equal(t, int64(1), s.OutOfOrder)
	s.add(5, 0, 0, 1)
	assert.Equal(t, int64(0), s.Errors, "errors never go below zero")

	// Jitter: transit 10ms, 12ms, 9ms -> D 0, 2ms, 3ms.
	s = udpRecvStats{}
	s.add(1, 0, 0.010, 1)
	assert.Equal(t, 0.0, s.Jitter)
	s.add(2, 1, 1.012, 1)
	j := 0.002 / 16
	assert.InDelta(t, j, s.Jitter, 1e-12)
	s.add(3, 2, 2.009, 1)
	j += (0.003 - j) / 16
	assert.InDelta(t, j, s.Jitter, 1e-12)

	// When packet 1 is lost the seed is zero, as in iperf3.
	s = udpRecvStats{}
	s.add(2, 0, 0.010, 1)
	assert.InDelta(t, 0.010/16, s.Jitter, 1e-12)
	assert.Equal(t, int64(1), s.Errors)
}

func TestPacerSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	now := start
	var slept time.Duration
	p := newPacer(8e6, start) // 1 MB/s: 1000 bytes every 1 ms
	p.now = func() time.Time { return now }
	p.sleep = func(d time.Duration) { slept += d; now = now.Add(d) }
	for i := 0; i < 1000; i++ {
		p.wait(1000)
	}
	// 1000 sends of 1000 bytes at 1 MB/s: the last is due at 999 ms.
	assert.Equal(t, 999*time.Millisecond, now.Sub(start))
	assert.Equal(t, 999*time.Millisecond, slept)
	// A sender that falls behind is told by how much.
	now = now.Add(50 * time.Millisecond)
	behind := p.wait(1000)
	assert.Equal(t, 49*time.Millisecond, behind) // due at 1000 ms, now 1049 ms
	// Unlimited never waits.
	u := newPacer(0, start)
	u.sleep = func(time.Duration) { t.Fatal("slept") }
	assert.Equal(t, time.Duration(0), u.wait(1<<20))

}

// FuzzServerOutput feeds arbitrary server_output_json documents to the
// merge of the server's TCP statistics; it must never panic or touch
// streams the server did not send.
func FuzzServerOutput(f *testing.F) {
	f.Add([]byte(`{"intervals":[{"streams":[{"socket":5,"start":0,"seconds":1,"sender":true,"retransmits":18446744073709551615,"snd_cwnd":100,"rtt":50,"rttvar":5,"pmtu":1500}]}]}`))
	f.Add([]byte(`{"intervals":[{"streams":[]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &Result{Protocol: "tcp", Intervals: []Interval{
			{StartSeconds: 0, EndSeconds: 1, Streams: []StreamInterval{{ID: 1, Reverse: true}, {ID: 3, Reverse: false, Retransmits: 7}}},
		}}
		r.Intervals[0].Download = &IntervalSum{}
		mergeServerTCPInfo(r, b)
		require.Equal(t, int64(7), r.Intervals[0].Streams[1].Retransmits, "a client-sent stream keeps its own numbers")
		if r.Intervals[0].Streams[0].TCPInfo {
			require.Equal(t, r.Intervals[0].Streams[0].Retransmits, r.Intervals[0].Download.Retransmits)
		}
	})
}
