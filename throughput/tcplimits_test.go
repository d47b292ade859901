package throughput

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimitsBetween: the fractions are the kernel counters' differences
// over the time between two samples, never their cumulative values; an
// unknown sample, or no time between them, is unknown.
func TestLimitsBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration, busy, rwnd, sndbuf time.Duration, sent, retrans uint64) limitSample {
		return limitSample{ok: true, at: t0.Add(d), busy: busy, rwnd: rwnd, sndbuf: sndbuf, sent: sent, retrans: retrans, delivery: 8e9}
	}
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		a, b limitSample
		want *TCPLimits
	}{
		{"deltas over the elapsed time", at(0, 5*time.Second, 2*time.Second, time.Second, 1e9, 1e6),
			at(time.Second, 5*time.Second+900*ms, 2*time.Second+600*ms, time.Second+100*ms, 1e9+4e6, 1e6+1e4),
			&TCPLimits{Busy: 0.9, RwndLimited: 0.6, SndbufLimited: 0.1, Retransmitted: 0.0025, DeliveryRate: 8e9}},
		{"idle sender", at(0, time.Second, 0, 0, 100, 0), at(2*time.Second, time.Second+20*ms, 0, 0, 200, 0),
			&TCPLimits{Busy: 0.01, DeliveryRate: 8e9}},
		{"nothing sent: no retransmit rate", at(0, 0, 0, 0, 100, 5), at(time.Second, 0, 0, 0, 100, 5),
			&TCPLimits{DeliveryRate: 8e9}},
		{"a jiffy past the interval clamps to 1", at(0, 0, 0, 0, 0, 0), at(100*ms, 104*ms, 0, 0, 10, 0),
			&TCPLimits{Busy: 1, DeliveryRate: 8e9}},
		{"counters that went back (a reused socket) read 0", at(0, time.Second, time.Second, 0, 100, 50), at(time.Second, 0, 0, 0, 50, 0),
			&TCPLimits{DeliveryRate: 8e9}},
		{"unknown first sample", limitSample{}, at(time.Second, 0, 0, 0, 0, 0), nil},
		{"unknown last sample", at(0, 0, 0, 0, 0, 0), limitSample{at: t0.Add(time.Second)}, nil},
		{"no time between", at(time.Second, 0, 0, 0, 0, 0), at(time.Second, 0, 0, 0, 0, 0), nil},
	} {
		got := limitsBetween(c.a, c.b)
		if c.want == nil {
			assert.Nil(t, got, c.name)
			continue
		}
		require.NotNil(t, got, c.name)
		assert.InDelta(t, c.want.Busy, got.Busy, 1e-9, c.name)
		assert.InDelta(t, c.want.RwndLimited, got.RwndLimited, 1e-9, c.name)
		assert.InDelta(t, c.want.SndbufLimited, got.SndbufLimited, 1e-9, c.name)
		assert.InDelta(t, c.want.Retransmitted, got.Retransmitted, 1e-9, c.name)
		assert.Equal(t, c.want.DeliveryRate, got.DeliveryRate, c.name)
	}
}

// TestCombineLimits: a direction's limits average its streams' time
// fractions, weight retransmitted bytes by bytes sent and sum delivery
// rates; one unknown stream makes the direction's unknown.
func TestCombineLimits(t *testing.T) {
	a := &TCPLimits{Busy: 1, RwndLimited: 0.8, SndbufLimited: 0, Retransmitted: 0.01, DeliveryRate: 1e9}
	b := &TCPLimits{Busy: 0.5, RwndLimited: 0, SndbufLimited: 0.2, Retransmitted: 0, DeliveryRate: 3e9}
	got := combineLimits([]*TCPLimits{a, b}, []int64{3e6, 1e6})
	require.NotNil(t, got)
	assert.InDelta(t, 0.75, got.Busy, 1e-12)
	assert.InDelta(t, 0.4, got.RwndLimited, 1e-12)
	assert.InDelta(t, 0.1, got.SndbufLimited, 1e-12)
	assert.InDelta(t, 0.0075, got.Retransmitted, 1e-12)
	assert.Equal(t, 4e9, got.DeliveryRate)

	z := combineLimits([]*TCPLimits{a}, []int64{0})
	require.NotNil(t, z)
	assert.Zero(t, z.Retransmitted, "no bytes sent: no retransmit rate")
	assert.Nil(t, combineLimits([]*TCPLimits{a, nil}, []int64{1, 1}))
	assert.Nil(t, combineLimits(nil, nil))
	assert.Nil(t, combineLimits([]*TCPLimits{a}, nil))
}

// TestTotalLimits: Result.Total's Limits are the sending direction's in a
// one-way test (a copy: changing it leaves the Summary alone) and both
// directions' combined in a bidirectional one, as a direction's combine
// its streams'; unknown when a direction's are unknown.
func TestTotalLimits(t *testing.T) {
	up := &TCPLimits{Busy: 1, RwndLimited: 0.6, Retransmitted: 0.01, DeliveryRate: 1e9}
	down := &TCPLimits{Busy: 0.4, SndbufLimited: 0.3, Retransmitted: 0, DeliveryRate: 2e9}
	sum := func(l *TCPLimits, streams int, sent int64) *Summary {
		s := &Summary{Limits: l, Streams: streams}
		s.Sent.Bytes = sent
		return s
	}

	oneWay := (&Result{Upload: sum(up, 2, 4e6)}).Total().Limits
	require.NotNil(t, oneWay, "a one-direction test has the sender's limits")
	assert.Equal(t, *up, *oneWay)
	oneWay.Busy = 0
	assert.Equal(t, 1.0, up.Busy, "Total gives a copy")
	rev := (&Result{Download: sum(down, 1, 1e6)}).Total().Limits
	require.NotNil(t, rev)
	assert.Equal(t, *down, *rev, "reverse: the server's, from its results")

	// Two upload streams and one download stream: fractions over three
	// streams, retransmits over the 4 MB + 1 MB sent.
	bidir := (&Result{Upload: sum(up, 2, 4e6), Download: sum(down, 1, 1e6)}).Total().Limits
	require.NotNil(t, bidir)
	assert.InDelta(t, (2*1+0.4)/3, bidir.Busy, 1e-12)
	assert.InDelta(t, 2*0.6/3, bidir.RwndLimited, 1e-12)
	assert.InDelta(t, 0.3/3, bidir.SndbufLimited, 1e-12)
	assert.InDelta(t, 0.01*4/5, bidir.Retransmitted, 1e-12)
	assert.Equal(t, 3e9, bidir.DeliveryRate)
	same := combineLimits([]*TCPLimits{up, up, down}, []int64{2e6, 2e6, 1e6})
	assert.InDelta(t, same.Busy, bidir.Busy, 1e-12, "as if its three streams were one direction's")
	assert.InDelta(t, same.Retransmitted, bidir.Retransmitted, 1e-12)

	assert.Nil(t, (&Result{Upload: sum(up, 1, 1), Download: sum(nil, 1, 1)}).Total().Limits,
		"a stock iperf3 server sends no limits: the total is unknown, not the client's alone")
	assert.Nil(t, (&Result{Upload: sum(nil, 1, 1)}).Total().Limits, "UDP, or no TCP_INFO")
	assert.Nil(t, (&Result{}).Total().Limits)
	assert.Nil(t, (*Result)(nil).Total().Limits)
}

// TestTotalQueueAccounting: Total sums the UDP senders' host refusals of
// both directions, and is queue-limited when either direction was.
func TestTotalQueueAccounting(t *testing.T) {
	up, down := &Summary{Streams: 1, QueueLimited: true}, &Summary{Streams: 1}
	up.Sent.LocalDrops, up.Sent.LocalRetries = 3, 5
	down.Sent.LocalRetries = 7
	got := (&Result{Upload: up, Download: down}).Total()
	assert.Equal(t, int64(3), got.Sent.LocalDrops)
	assert.Equal(t, int64(12), got.Sent.LocalRetries)
	assert.True(t, got.QueueLimited)
	assert.False(t, (&Result{Download: down}).Total().QueueLimited)
}

// TestTCPLimitsJSON pins the keys: fractions and a rate, units in the names.
func TestTCPLimitsJSON(t *testing.T) {
	b, err := json.Marshal(TCPLimits{Busy: 0.5, RwndLimited: 0.25, SndbufLimited: 0.125, Retransmitted: 0.001, DeliveryRate: 2e9})
	require.NoError(t, err)
	assert.JSONEq(t, `{"busy_fraction":0.5,"rwnd_limited_fraction":0.25,"sndbuf_limited_fraction":0.125,
		"retransmitted_fraction":0.001,"delivery_rate_bits_per_second":2e9}`, string(b))
}

// TestDecodeLimits: a peer's limits are taken only when every fraction is
// within 0..1 and the rate is finite and not negative.
func TestDecodeLimits(t *testing.T) {
	ok := &TCPLimits{Busy: 0.9, RwndLimited: 0.5, SndbufLimited: 0.1, Retransmitted: 0.02, DeliveryRate: 5e9}
	assert.Equal(t, ok, decodeLimits(encodeLimits(ok)))
	assert.Nil(t, encodeLimits(nil))
	for _, raw := range []string{"", "null", "[]", `{"busy_fraction":1.5}`, `{"rwnd_limited_fraction":-0.1}`,
		`{"retransmitted_fraction":2}`, `{"delivery_rate_bits_per_second":-1}`, `{"busy_fraction":"x"}`, `{"busy_fraction":1e999}`} {
		if raw == "null" {
			assert.NotNil(t, decodeLimits(json.RawMessage(raw)), "null decodes to zero limits")
			continue
		}
		assert.Nil(t, decodeLimits(json.RawMessage(raw)), raw)
	}
}

// FuzzDecodeLimits: whatever a peer sends, decodeLimits returns nil or
// limits within their ranges, which encode and decode to themselves.
func FuzzDecodeLimits(f *testing.F) {
	f.Add([]byte(`{"busy_fraction":0.9,"rwnd_limited_fraction":0.5,"sndbuf_limited_fraction":0,"retransmitted_fraction":0.001,"delivery_rate_bits_per_second":1e9}`))
	f.Add([]byte(`{"busy_fraction":-1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := decodeLimits(b)
		if l == nil {
			return
		}
		for _, v := range []float64{l.Busy, l.RwndLimited, l.SndbufLimited, l.Retransmitted} {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("fraction %v out of range from %q", v, b)
			}
		}
		if !(l.DeliveryRate >= 0) || math.IsInf(l.DeliveryRate, 0) {
			t.Fatalf("rate %v from %q", l.DeliveryRate, b)
		}
		if back := decodeLimits(encodeLimits(l)); back == nil || *back != *l {
			t.Fatalf("round trip of %+v gave %+v", l, back)
		}
	})
}

// TestIperfJSONCarriesLimits: -J adds tcp_limits beside iperf3's keys in
// the interval entries, the end's sender entries and sum_sent, and leaves
// it out where the limits are unknown.
func TestIperfJSONCarriesLimits(t *testing.T) {
	lim := &TCPLimits{Busy: 0.9, RwndLimited: 0.7, Retransmitted: 0.001, DeliveryRate: 1e9}
	r := &Result{Role: "client", Config: Config{Duration: time.Second, Interval: time.Second, Streams: 1}}
	r.Intervals = []Interval{{End: time.Second, Streams: []StreamInterval{{ID: 1, Sender: true, TCP: &TCPInfo{}, Limits: lim}}}}
	r.Streams = []StreamResult{{ID: 1, Limits: lim}}
	r.Streams[0].Duration, r.Streams[0].Sent.Retransmits = time.Second, 3
	r.Upload = &Summary{Streams: 1, Limits: lim}
	r.Upload.Duration = time.Second
	b, err := iperfJSON(r)
	require.NoError(t, err)
	var doc struct {
		Intervals []struct {
			Streams []map[string]json.RawMessage `json:"streams"`
		} `json:"intervals"`
		End struct {
			Streams []struct {
				Sender, Receiver map[string]json.RawMessage
			} `json:"streams"`
			SumSent     map[string]json.RawMessage `json:"sum_sent"`
			SumReceived map[string]json.RawMessage `json:"sum_received"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	want := string(encodeLimits(lim))
	require.Len(t, doc.Intervals, 1)
	assert.JSONEq(t, want, string(doc.Intervals[0].Streams[0]["tcp_limits"]))
	assert.Contains(t, doc.Intervals[0].Streams[0], "snd_cwnd", "iperf3's keys stay")
	require.Len(t, doc.End.Streams, 1)
	assert.JSONEq(t, want, string(doc.End.Streams[0].Sender["tcp_limits"]))
	assert.NotContains(t, doc.End.Streams[0].Receiver, "tcp_limits")
	assert.JSONEq(t, want, string(doc.End.SumSent["tcp_limits"]))
	assert.NotContains(t, doc.End.SumReceived, "tcp_limits")

	r.Intervals[0].Streams[0].Limits, r.Streams[0].Limits, r.Upload.Limits = nil, nil, nil
	b, err = iperfJSON(r)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "tcp_limits", "unknown limits are left out")
}

// TestMergeServerLimits: the limits in a server's -J intervals reach the
// client's intervals for the streams the server sent, beside its TCP_INFO,
// and out-of-range ones are dropped.
func TestMergeServerLimits(t *testing.T) {
	r := &Result{Config: Config{Reverse: true}}
	r.Intervals = []Interval{
		{Start: 0, End: time.Second, Streams: []StreamInterval{{ID: 1, Reverse: true}}, Download: &Counts{}},
		{Start: time.Second, End: 2 * time.Second, Streams: []StreamInterval{{ID: 1, Reverse: true}}, Download: &Counts{}},
	}
	raw := []byte(`{"intervals":[
		{"streams":[{"socket":5,"start":0,"seconds":1,"sender":true,"retransmits":2,"snd_cwnd":1000,"rtt":50,
			"tcp_limits":{"busy_fraction":0.9,"rwnd_limited_fraction":0.6,"sndbuf_limited_fraction":0,"retransmitted_fraction":0.001,"delivery_rate_bits_per_second":1e9}}]},
		{"streams":[{"socket":5,"start":1,"seconds":1,"sender":true,"retransmits":0,"snd_cwnd":1000,"rtt":50,
			"tcp_limits":{"busy_fraction":7}}]}]}`)
	mergeServerTCPInfo(r, raw)
	first := r.Intervals[0].Streams[0]
	require.NotNil(t, first.TCP)
	assert.Equal(t, &TCPLimits{Busy: 0.9, RwndLimited: 0.6, Retransmitted: 0.001, DeliveryRate: 1e9}, first.Limits)
	second := r.Intervals[1].Streams[0]
	require.NotNil(t, second.TCP, "the server's TCP_INFO is merged")
	assert.Nil(t, second.Limits, "a busy fraction of 7 is not taken")
}
