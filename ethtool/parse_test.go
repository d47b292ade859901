package ethtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseFile(t testing.TB, name string) Stats {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := parseStats(f)
	require.NoError(t, err, name)
	return s
}

func TestParseTextFixtures(t *testing.T) {
	tests := []struct {
		file      string
		n         int
		first     Stat
		want      map[string]uint64
		absent    []string
		lastQueue string
	}{
		{
			file:  "ena-2.17-same-az-after.txt",
			n:     335,
			first: Stat{"total_resets", 0},
			want: map[string]uint64{
				"ena_srd_mode": 3, "ena_srd_tx_pkts": 1232525165, "ena_srd_eligible_tx_pkts": 1232525250,
				"conntrack_allowance_available": 136790, "queue_0_tx_tx_poll": 14500290, "ena_admin_q_completed_cmd": 412,
			},
		},
		{
			file:   "ena-upstream.txt",
			n:      7 + 5 + 2*(15+13) + 15 + 5,
			first:  Stat{"tx_timeout", 0},
			want:   map[string]uint64{"bw_in_allowance_exceeded": 12, "queue_2_xdp_tx_cnt": 0, "queue_1_rx_bad_csum": 0},
			absent: []string{"ena_srd_mode", "conntrack_allowance_available", "reset_fail"},
		},
		{
			file:   "ena-2.4-no-srd.txt",
			n:      7 + 5 + 2*(15+13) + 5,
			first:  Stat{"tx_timeout", 0},
			want:   map[string]uint64{"bw_out_allowance_exceeded": 3},
			absent: []string{"ena_srd_tx_pkts", "conntrack_allowance_available"},
		},
		{
			file:   "ena-1.x-old.txt",
			n:      7 + 12 + 11 + 5,
			first:  Stat{"tx_timeout", 0},
			want:   map[string]uint64{"io_suspend": 0, "interface_up": 1},
			absent: []string{"pps_allowance_exceeded", "ena_srd_mode"},
		},
		{
			file:  "doc-tabs.txt",
			n:     11,
			first: Stat{"bw_in_allowance_exceeded", 0},
			want:  map[string]uint64{"ena_srd_tx_pkts": 28195047, "ena_srd_eligible_tx_pkts": 28195063, "conntrack_allowance_available": 136812},
		},
		{
			file:  "veth.txt",
			n:     10,
			first: Stat{"peer_ifindex", 2},
			want:  map[string]uint64{"tx_queue_0_xdp_xmit_errors": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := parseFile(t, tt.file)
			assert.Len(t, s, tt.n)
			assert.Equal(t, tt.first, s[0])
			for k, v := range tt.want {
				got, ok := s.Get(k)
				assert.True(t, ok, k)
				assert.Equal(t, v, got, k)
			}
			for _, k := range tt.absent {
				_, has := s.Get(k)
				assert.False(t, has, k)
			}
		})
	}
}

func TestParseTextForms(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Stats
	}{
		{"header and spaces", "NIC statistics:\n     rx_packets: 12\n     tx_packets: 7\n", Stats{{"rx_packets", 12}, {"tx_packets", 7}}},
		{"no header, tabs", "\trx_packets: 12\n\ttx_packets:\t7\n", Stats{{"rx_packets", 12}, {"tx_packets", 7}}},
		{"CRLF and blank lines", "NIC statistics:\r\n\r\n  a: 1\r\n\r\n  b: 2\r\n", Stats{{"a", 1}, {"b", 2}}},
		{"max uint64", "x: 18446744073709551615\n", Stats{{"x", 18446744073709551615}}},
		{"32-byte name", "  abcdefghijklmnopqrstuvwxyz012345: 5\n", Stats{{"abcdefghijklmnopqrstuvwxyz012345", 5}}},
		{"colon in name (bnx2x style)", "     [0]: rx_bytes: 99\n", Stats{{"[0]: rx_bytes", 99}}},
		{"space in name", "     rx 64 byte packets: 3\n", Stats{{"rx 64 byte packets", 3}}},
		{"unknown names kept, no final newline", "weird_vendor_counter: 4", Stats{{"weird_vendor_counter", 4}}},
		{"duplicate names kept", "a: 1\na: 2\n", Stats{{"a", 1}, {"a", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseStats(strings.NewReader(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, s)
		})
	}
}

func TestParseTextErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		line   int
		reason string
	}{
		{"no colon", "NIC statistics:\n  a: 1\n  garbage\n", 3, "no ':'"},
		{"negative", "a: -1\n", 1, "not an unsigned"},
		{"overflow", "a: 1\n\nb: 18446744073709551616\n", 3, "64 bits"},
		{"hex", "a: 0x10\n", 1, "not an unsigned"},
		{"empty name", "   : 5\n", 1, "empty statistic name"},
		{"missing value", "a:\n", 1, "missing value"},
		{"long name", "abcdefghijklmnopqrstuvwxyz0123456: 1\n", 1, "longer than 32"},
		{"header twice", "NIC statistics:\nNIC statistics:\n", 2, "missing value"},
		{"float", "a: 1.5\n", 1, "not an unsigned"},
		{"invalid UTF-8", "a\xff: 1\n", 1, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseStats(strings.NewReader(tt.in))
			var pe *parseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.line, pe.Line)
			assert.Contains(t, pe.Reason, tt.reason)
			assert.Contains(t, err.Error(), "ethtool: line ")
		})
	}
}

func TestParseTextNoStats(t *testing.T) {
	for _, in := range []string{"", "\n\n", "NIC statistics:\n", "no stats available\n"} {
		_, err := parseStats(strings.NewReader(in))
		require.Error(t, err, "%q", in)
		assert.ErrorIs(t, err, ErrNoStats, "%q", in)
		assert.ErrorIs(t, err, os.ErrNotExist, "%q", in)
	}
}

func TestParseTextLongLine(t *testing.T) {
	_, err := parseStats(strings.NewReader("a: 1\n" + strings.Repeat("x", 5000) + ": 1\n"))
	var pe *parseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line)
}

func TestParseTextReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := parseStats(&failReader{err: boom})
	assert.ErrorIs(t, err, boom)
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

func TestStatsJSONRoundTrip(t *testing.T) {
	s := parseFile(t, "ena-upstream.txt")
	b, err := s.MarshalJSON()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), `{"tx_timeout":0,"suspend":0,`), string(b[:40]))
	var back Stats
	require.NoError(t, back.UnmarshalJSON(b))
	assert.Equal(t, s, back)

	var bad Stats
	assert.Error(t, bad.UnmarshalJSON([]byte(`{"a":-1}`)))
	assert.Error(t, bad.UnmarshalJSON([]byte(`{"a":"1"}`)))
	assert.Error(t, bad.UnmarshalJSON([]byte(`[1]`)))
}

func FuzzParseText(f *testing.F) {
	for _, name := range []string{"ena-upstream.txt", "doc-tabs.txt", "veth.txt", "ena-1.x-old.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Add("NIC statistics:\n a: 1\n")
	f.Add("a: 18446744073709551616")
	f.Add("no stats available\n")
	f.Add(" : :\n\r\n")
	f.Add(strings.Repeat("a: 1\n", maxStats+1)) // one past the limit
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parseStats(strings.NewReader(in))
		if err != nil {
			require.Nil(t, s)
			return
		}
		require.NotEmpty(t, s)
		require.LessOrEqual(t, len(s), maxStats)
		// Whatever parsed must print and parse back to the same list.
		var b strings.Builder
		b.WriteString("NIC statistics:\n")
		for _, st := range s {
			require.NotEmpty(t, st.Name)
			require.LessOrEqual(t, len(st.Name), maxNameLen)
			b.WriteString("     " + st.Name + ": " + uitoa(st.Value) + "\n")
		}
		back, err := parseStats(strings.NewReader(b.String()))
		require.NoError(t, err)
		require.Equal(t, s, back)
	})
}

func uitoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(buf[i:])
}

func FuzzParseSnapshot(f *testing.F) {
	f.Add(`{"interface":"eth0","driver":"ena","stats":{"ena_srd_mode":3,"ena_srd_tx_pkts":28195047}}`)
	f.Add(`  {"time":"2026-11-30T10:00:00Z","stats":{"a":18446744073709551615}}`)
	f.Add(`{"stats":{"a":1,"a":2}}`)
	f.Add("NIC statistics:\n     a: 1\n")
	f.Add(`{"stats":[]}`)
	f.Add(`{"stats":{"a":1}} trailing {{{`)
	f.Add(`{"stats":{"":1}}`)
	f.Add(`{"stats":{" padded ":1}}`)
	f.Add(`{"stats":{"this_name_is_much_longer_than_thirty_two_bytes":2}}`)
	f.Add(`{"stats":{"a\nb":1}}`)
	f.Add("\n\n\nNIC statistics:\n     a: 1\n     b: x\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSnapshot(strings.NewReader(in))
		require.NotNil(t, s, "never nil, even after an error")
		if err != nil {
			require.Equal(t, &Snapshot{}, s, "nothing of a refused input is kept")
			return
		}
		require.NotEmpty(t, s.Stats)
		require.LessOrEqual(t, len(s.Stats), maxStats)
		// A parsed snapshot survives a JSON round trip unchanged.
		b, err := json.Marshal(s)
		require.NoError(t, err)
		back, err := ParseSnapshot(bytes.NewReader(b))
		require.NoError(t, err)
		require.Equal(t, s.Stats, back.Stats)
		require.Equal(t, s.Interface, back.Interface)
		// And through text, as WriteText promises.
		var txt bytes.Buffer
		require.NoError(t, s.WriteText(&txt))
		fromText, err := parseStats(&txt)
		require.NoError(t, err)
		require.Equal(t, s.Stats, fromText)
	})
}

func TestParseSnapshotLineNumbers(t *testing.T) {
	for _, in := range []string{
		"\n\n\nNIC statistics:\n     a: 1\n     b: x\n",
		"\r\n \t\n\n\tNIC statistics:\n     a: 1\n     b: x\n",
		"\n\n\n\n\nb: x\n", // the bad line comes first
	} {
		_, textErr := parseStats(strings.NewReader(in))
		_, snapErr := ParseSnapshot(strings.NewReader(in))
		var pt, ps *parseError
		require.ErrorAs(t, textErr, &pt, "%q", in)
		require.ErrorAs(t, snapErr, &ps, "%q", in)
		assert.Equal(t, pt.Line, ps.Line, "%q", in)
		assert.Equal(t, strings.Count(in, "\n"), ps.Line, "%q: the last line is bad", in)
	}
}

func TestParseTextTooManyStats(t *testing.T) {
	var b strings.Builder
	b.WriteString("NIC statistics:\n")
	for i := range maxStats {
		b.WriteString("     s" + itoa(i) + ": 1\n")
	}
	s, err := parseStats(strings.NewReader(b.String()))
	require.NoError(t, err, "exactly the limit is fine")
	assert.Len(t, s, maxStats)

	b.WriteString("     one_more: 1\n")
	_, err = parseStats(strings.NewReader(b.String()))
	var pe *parseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, maxStats+2, pe.Line)
	assert.ErrorContains(t, err, "more than 65536 statistics")
	_, err = ParseSnapshot(strings.NewReader(b.String()))
	assert.ErrorContains(t, err, "more than 65536 statistics")

	_, err = parseStats(strings.NewReader(strings.Repeat("a: 1\n", 2_000_000)))
	assert.ErrorContains(t, err, "more than 65536 statistics")
}

func TestParseSnapshotJSONBounds(t *testing.T) {
	_, err := ParseSnapshot(strings.NewReader(`{"stats":{"a":1}} trailing garbage {{{`))
	assert.ErrorContains(t, err, "ethtool: snapshot JSON")
	_, err = ParseSnapshot(strings.NewReader(`{"stats":{"a":1}}{"stats":{"b":1}}`))
	assert.Error(t, err, "two values")
	s, err := ParseSnapshot(strings.NewReader(" {\"stats\":{\"a\":1}}\n\n"))
	require.NoError(t, err, "white space after the value is fine")
	assert.Equal(t, Stats{{"a", 1}}, s.Stats)

	// A JSON value that does not end within maxSnapshotJSON bytes is not
	// read to its end.
	huge := io.MultiReader(strings.NewReader(`{"interface":"`), &repeatReader{b: 'x', n: maxSnapshotJSON + 10})
	_, err = ParseSnapshot(huge)
	assert.ErrorContains(t, err, "larger than 33554432 bytes")

	var b strings.Builder
	b.WriteString(`{"stats":{`)
	for i := range maxStats + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"s` + itoa(i) + `":1`)
	}
	b.WriteString("}}")
	_, err = ParseSnapshot(strings.NewReader(b.String()))
	assert.ErrorContains(t, err, "more than 65536 statistics")
}

// repeatReader reads n copies of b.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	p[0] = r.b
	for i := 1; i < n; i *= 2 {
		copy(p[i:n], p[:i])
	}
	r.n -= n
	return n, nil
}

func TestStatsJSONNamesFollowParseText(t *testing.T) {
	for _, name := range []string{"", " padded", "padded ", "\tx", "this_name_is_much_longer_than_thirty_two_bytes", "a\nb"} {
		var s Stats
		js, err := json.Marshal(map[string]int{name: 1})
		require.NoError(t, err)
		err = s.UnmarshalJSON(js)
		assert.ErrorContains(t, err, "ethtool: stats JSON", "%q", name)
		_, err = parseStats(strings.NewReader(name + ": 1\n"))
		if name != " padded" && name != "padded " && name != "\tx" {
			assert.Error(t, err, "%q: the text parser rejects it too", name)
		}
		assert.Error(t, (&Snapshot{Stats: Stats{{name, 1}}}).WriteText(io.Discard), "%q", name)
	}
	// Names with spaces or colons inside, and at the limit, are fine.
	var s Stats
	require.NoError(t, s.UnmarshalJSON([]byte(`{"rx queue 0: drops":1,"a:":2,"abcdefghijklmnopqrstuvwxyz012345":3}`)))
	var txt bytes.Buffer
	require.NoError(t, (&Snapshot{Stats: s}).WriteText(&txt))
	back, err := parseStats(&txt)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}
