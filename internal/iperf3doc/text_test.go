package iperf3doc

import (
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTextOutput(t *testing.T) {
	r := &flowmodel.Result{Streams: []flowmodel.StreamResult{{ID: 1, Totals: flowmodel.Totals{Duration: time.Second,
		Sent:     flowmodel.Counts{Bytes: 3 << 30, BitsPerSecond: 28.9e9, Retransmits: 14},
		Received: flowmodel.Counts{Bytes: 3 << 30, BitsPerSecond: 28.9e9}}}},
		Intervals: []flowmodel.Interval{{Start: 0, End: time.Second, Streams: []flowmodel.StreamInterval{{ID: 1, Sender: true, Counts: flowmodel.Counts{Bytes: 3 << 30,
			BitsPerSecond: 28.9e9, Retransmits: 14}, TCP: &flowmodel.TCPInfo{SndCwndBytes: 1023 << 10}}}}},
		Notes: []string{"tcp_info: not available on this platform"},
	}
	assert.Equal(t, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"+
		"[  4]   0.00-1.00   sec  3.00 GBytes  28.9 Gbits/sec   14   1023 KBytes       \n"+
		separator+
		"[ ID] Interval           Transfer     Bitrate         Retr\n"+
		"[  4]   0.00-1.00   sec  3.00 GBytes  28.9 Gbits/sec   14            sender\n"+
		"[  4]   0.00-1.00   sec  3.00 GBytes  28.9 Gbits/sec                  receiver\n"+
		"note: tcp_info: not available on this platform\n", Text(r))
}

// TestTextRoles checks the server's view of a bidirectional UDP test: role
// tags, the UDP columns and a [SUM] line per direction.
func TestTextRoles(t *testing.T) {
	cfg := &flowmodel.Config{UDP: true, Bidir: true, Streams: 2, Interval: time.Second}
	var b strings.Builder
	rep := NewTextReport(&b, cfg, Options{Server: true, Format: 'm'})
	up, down := flowmodel.Counts{Bytes: 1250000, BitsPerSecond: 10e6, Packets: 1000, LostPackets: 10, Jitter: 20 * time.Microsecond}, flowmodel.Counts{Bytes: 1250000, BitsPerSecond: 10e6, Packets: 1000}
	rep.Interval(flowmodel.Interval{End: time.Second, Upload: &up, Download: &down, Streams: []flowmodel.StreamInterval{
		{ID: 1, Counts: up}, {ID: 3, Counts: up},
		{ID: 4, Sender: true, Reverse: true, Counts: down}, {ID: 5, Sender: true, Reverse: true, Counts: down}}})
	// A last, empty sliver of an interval is not reported, as in 3.21.
	rep.Interval(flowmodel.Interval{Start: time.Second, End: time.Second + time.Millisecond, Streams: []flowmodel.StreamInterval{{ID: 1}}})
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Len(t, lines, 7, out)
	assert.Equal(t, "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams", lines[0])
	// A 3.21 server's first stream is [  5]: its listener holds a descriptor.
	assert.Equal(t, "[  5][RX-S]   0.00-1.00   sec  1.19 MBytes  10.0 Mbits/sec  0.020 ms  10/1000 (1%)  ", lines[1])
	assert.Equal(t, "[  8][TX-S]   0.00-1.00   sec  1.19 MBytes  10.0 Mbits/sec            1000  ", lines[3])
	assert.Equal(t, "[SUM][RX-S]   0.00-1.00   sec  1.19 MBytes  10.0 Mbits/sec  0.020 ms  10/1000 (1%)  ", lines[5])
	assert.True(t, strings.HasPrefix(lines[6], "[SUM][TX-S]"), lines[6])
}

// TestTextServerSummary: a server writes only its own side's summary line,
// as 3.21's server does, and with -V says the other side's is not there.
func TestTextServerSummary(t *testing.T) {
	tot := flowmodel.Totals{Duration: time.Second,
		Sent:     flowmodel.Counts{Bytes: 1 << 30, BitsPerSecond: 8.6e9, Retransmits: 3, Packets: 40},
		Received: flowmodel.Counts{Bytes: 1 << 30, BitsPerSecond: 8.6e9, Packets: 40, LostPackets: 1, Jitter: 6 * time.Microsecond}}
	summary := func(cfg flowmodel.Config, verbose bool) []string {
		var b strings.Builder
		rep := NewTextReport(&b, &cfg, Options{Server: true, Verbose: verbose})
		rep.Summary(&flowmodel.Result{Config: cfg, Streams: []flowmodel.StreamResult{{ID: 1, Reverse: cfg.Reverse, Totals: tot}}})
		return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	}
	got := summary(flowmodel.Config{}, false)
	assert.Equal(t, []string{strings.TrimSuffix(separator, "\n"),
		"[ ID] Interval           Transfer     Bitrate",
		"[  5]   0.00-1.00   sec  1.00 GBytes  8.60 Gbits/sec                  receiver"}, got)
	got = summary(flowmodel.Config{Reverse: true}, false)
	assert.Equal(t, []string{strings.TrimSuffix(separator, "\n"),
		"[ ID] Interval           Transfer     Bitrate         Retr",
		"[  5]   0.00-1.00   sec  1.00 GBytes  8.60 Gbits/sec    3            sender"}, got)
	got = summary(flowmodel.Config{}, true)
	assert.Contains(t, got, "[  5] (sender statistics not available)")
	assert.Len(t, got, 6, "separator, Test Complete, header, not available, receiver, CPU")
	got = summary(flowmodel.Config{UDP: true}, false)
	assert.Equal(t, "[  5]   0.00-1.00   sec  1.00 GBytes  8.60 Gbits/sec  0.006 ms  1/40 (2.5%)  receiver", got[2])
	assert.Len(t, got, 3)
}

func TestUnitText(t *testing.T) {
	for _, tc := range []struct {
		bytes  float64
		format byte
		want   string
	}{
		{0, 'a', "0.00 bit"},
		{125, 'a', "1.00 Kbit"},
		{2.8125e9, 'a', "22.5 Gbit"},
		{1.5 * (1 << 30), 'A', "1.50 GByte"},
		{712 << 20, 'A', " 712 MByte"},
		{1018 << 20, 'A', "1018 MByte"},
		{1 << 40, 'A', "1.00 TByte"},
		{2.8125e9, 'm', "22500 Mbit"},
		{2.8125e9, 'k', "22500000 Kbit"},
		{1 << 30, 'M', "1024 MByte"},
		{1 << 30, 'G', "1.00 GByte"},
		{1 << 20, 'K', "1024 KByte"},
		{1e12, 't', "8.00 Tbit"},
		{1 << 50, 'A', "1024 TByte"},
	} {
		assert.Equal(t, tc.want, unitText(tc.bytes, tc.format), "%v %c", tc.bytes, tc.format)
	}
}

func TestJitterText(t *testing.T) {
	for v, want := range map[float64]string{
		0:        "0.000",
		0.0123:   "0.012",
		1.5:      "1.500",
		0.00038:  "0.00038",
		0.000042: "0.000042",
		0.00099:  "0.00099",
	} {
		assert.Equal(t, want, strings.TrimSpace(jitterText(v)), "%g ms: a nonzero jitter never reads 0.000", v)
	}
	assert.Equal(t, "0.00042", FormatJitter(420*time.Nanosecond))
	assert.Equal(t, "1.500", FormatJitter(1500*time.Microsecond))
}
