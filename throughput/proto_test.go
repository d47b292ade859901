package throughput

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

	// When packet 1 is lost the first datagram received still seeds the
	// transit series, as in iperf3 (iperf_udp_recv's first_packet is
	// bytes_received == 0): a constant one-way delay, a clock offset
	// between the hosts included, is no jitter.
	s = udpRecvStats{}
	for c := uint64(2); c <= 5; c++ {
		s.add(c, float64(c), float64(c)+0.5, 1)
	}
	assert.Zero(t, s.Jitter)
	assert.Equal(t, int64(1), s.Errors)

	// The end of the omit period starts the estimate afresh, as iperf3's
	// iperf_reset_stats: a new delay is no jitter either.
	s.add(6, 6, 6.6, 1)
	require.Positive(t, s.Jitter)
	s.restartJitter()
	assert.Zero(t, s.Jitter)
	s.add(7, 7, 7.9, 1)
	s.add(8, 8, 8.9, 1)
	assert.Zero(t, s.Jitter)
	assert.Equal(t, uint64(8), s.Highest, "the sequence accounting carries on")

	// A forged count near 2^64 must not wrap Highest+1 and turn every
	// later datagram into a loss.
	s = udpRecvStats{}
	s.add(1, 0, 0, 1)
	s.add(^uint64(0), 0, 0, 1)
	s.add(2, 0, 0, 1)
	s.add(3, 0, 0, 1)
	assert.Equal(t, uint64(3), s.Highest)
	assert.Zero(t, s.Errors)
	assert.Equal(t, int64(4), s.Datagrams)
}

// FuzzServerOutput feeds arbitrary server_output_json documents to the
// merge of the server's TCP statistics; it must never panic or touch
// streams the server did not send.
func FuzzServerOutput(f *testing.F) {
	f.Add([]byte(`{"intervals":[{"streams":[{"socket":5,"start":0,"seconds":1,"sender":true,"retransmits":18446744073709551615,"snd_cwnd":100,"rtt":50,"rttvar":5,"pmtu":1500}]}]}`))
	f.Add([]byte(`{"intervals":[{"streams":[]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &Result{Intervals: []Interval{
			{Start: 0, End: time.Second, Streams: []StreamInterval{{ID: 1, Reverse: true}, {ID: 3, Counts: Counts{Retransmits: 7}}}},
		}}
		r.Intervals[0].Download = &Counts{}
		mergeServerTCPInfo(r, b)
		require.Equal(t, int64(7), r.Intervals[0].Streams[1].Retransmits, "a client-sent stream keeps its own numbers")
		if r.Intervals[0].Streams[0].TCP != nil {
			require.Equal(t, r.Intervals[0].Streams[0].Retransmits, r.Intervals[0].Download.Retransmits)
		}
	})
}
