package throughput

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
)

// TestIperf3docModelReadsEveryField: the renderers' model is filled from a
// Result's JSON form, so a key renamed on either side would leave a field
// zero and the reports silently wrong. Every model field must arrive from
// a Result whose fields are all set.
func TestIperf3docModelReadsEveryField(t *testing.T) {
	c := Counts{Bytes: 1, BitsPerSecond: 2, Retransmits: 3, Packets: 4, LostPackets: 5, LostPercent: 6, OutOfOrder: 7,
		Jitter: 8, LocalDrops: 9, LocalRetries: 10}
	lim := &TCPLimits{Busy: 0.1, RwndLimited: 0.2, SndbufLimited: 0.3, Retransmitted: 0.4, DeliveryRate: 5}
	tot := Totals{Duration: time.Second, Sent: c, Received: c}
	led := &Ledger{Offered: 1, Received: 2, Reordered: 3, Duplicated: i64(4), Retried: 5, Disagreement: "d",
		Lines: []LedgerLine{{Name: LinePath, Count: i64(1), Counter: i64(2), Scope: ScopeRemainder, Source: "s", Unknown: "u"}}}
	cfg := Config{UDP: true, Streams: 2, Duration: time.Second, Bytes: 1, Blocks: 2, Reverse: true, Bidir: true,
		BlockLen: 3, Bitrate: 4, Omit: 5, Interval: 6}
	cfg.Window, cfg.MSS, cfg.TOS, cfg.FQRate, cfg.GSO, cfg.GRO, cfg.ExtraData = 1, 2, 3, 4, OffloadOn, OffloadOn, "x"
	r := &Result{Role: "client", Config: cfg, RemoteAddr: "a:1", Cookie: "c", Start: time.Unix(1, 2),
		SndBufActual: 1, RcvBufActual: 2, Congestion: "cubic", RemoteCongestion: "bbr",
		Intervals: []Interval{{Start: 1, End: 2, Omitted: true, Upload: &c, Download: &c, Streams: []StreamInterval{
			{Counts: c, ID: 1, Sender: true, Reverse: true, Limits: lim,
				TCP: &TCPInfo{SndCwndBytes: 1, RTT: 2, RTTVar: 3, PMTU: 4, SndWndBytes: 5, ReorderSeen: 6}}}}},
		Streams:  []StreamResult{{Totals: tot, ID: 1, LocalAddr: "b:2", RemoteAddr: "a:1", Reverse: true, Limits: lim}},
		Upload:   &Summary{Totals: tot, Streams: 1, SenderLimited: true, Limits: lim, QueueLimited: true, Ledger: led},
		Download: &Summary{Totals: tot, Streams: 1, SenderLimited: true, Limits: lim, QueueLimited: true, Ledger: led},
		CPU:      CPUUtilization{1, 2, 3, 4, 5, 6}, Notes: []string{"n"}, ServerOutputJSON: []byte(`{}`),
		ServerOutputText: "t", ControlMSS: 1}
	m, err := iperf3doc.From[iperf3doc.Result](r)
	require.NoError(t, err)
	for _, path := range zeroFields(reflect.ValueOf(m), "Result") {
		t.Errorf("%s is zero: its JSON key is not throughput's", path)
	}
	assert.EqualValues(t, OffloadOn, iperf3doc.OffloadOn)
}

// zeroFields lists the paths of v's zero fields, looking into structs,
// pointers and the first element of slices.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(v.Elem(), path)
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		return zeroFields(v.Index(0), path+"[0]")
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			break
		}
		var zero []string
		for i := range v.NumField() {
			zero = append(zero, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return zero
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}
