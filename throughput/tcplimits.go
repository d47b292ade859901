package throughput

import (
	"encoding/json"
	"math"
	"time"

	"github.com/netperfkit/netperfkit/internal/flowmodel"
)

// limitSample is a TCP sender's cumulative limit counters at one instant.
type limitSample struct {
	ok                 bool
	at                 time.Time
	busy, rwnd, sndbuf time.Duration // tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited
	sent, retrans      uint64        // tcpi_bytes_sent, tcpi_bytes_retrans
	delivery           float64       // tcpi_delivery_rate, in bits/s
}

// limitsBetween is what held the sender back from a to b, nil when either
// sample is unknown or no time passed between them.
func limitsBetween(a, b limitSample) *TCPLimits {
	el := b.at.Sub(a.at)
	if !a.ok || !b.ok || el <= 0 {
		return nil
	}
	frac := func(x, y time.Duration) float64 { return clamp01(float64(y-x) / float64(el)) }
	l := &TCPLimits{Busy: frac(a.busy, b.busy), RwndLimited: frac(a.rwnd, b.rwnd),
		SndbufLimited: frac(a.sndbuf, b.sndbuf), DeliveryRate: b.delivery}
	if b.sent > a.sent && b.retrans >= a.retrans {
		l.Retransmitted = clamp01(float64(b.retrans-a.retrans) / float64(b.sent-a.sent))
	}
	return l
}

// clamp01 bounds a fraction the kernel's jiffy clocks can push just past
// 0 or 1; NaN reads 0.
func clamp01(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return math.Min(v, 1)
}

// combineLimits is one direction's limits from its streams': the time
// fractions averaged over the streams, the retransmitted fraction weighted
// by the bytes each stream sent, the delivery rates summed. It is nil when
// any stream's are unknown, or there are none.
func combineLimits(ls []*TCPLimits, sent []int64) *TCPLimits {
	ones := make([]int64, len(ls))
	for i := range ones {
		ones[i] = 1
	}
	return flowmodel.WeighLimits(ls, ones, sent)
}

// decodeLimits reads the limits a peer sent with its results (the
// tcp_limits key, this package's addition to iperf3's results object): nil
// when absent, malformed, or out of range, so a peer's garbage never
// reaches a verdict.
func decodeLimits(raw json.RawMessage) *TCPLimits {
	if len(raw) == 0 {
		return nil
	}
	var l TCPLimits
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	for _, f := range []float64{l.Busy, l.RwndLimited, l.SndbufLimited, l.Retransmitted} {
		if !(f >= 0 && f <= 1) {
			return nil
		}
	}
	if !(l.DeliveryRate >= 0) || math.IsInf(l.DeliveryRate, 0) {
		return nil
	}
	return &l
}

// encodeLimits is l as the tcp_limits key of this side's results, nil for
// unknown limits.
func encodeLimits(l *TCPLimits) json.RawMessage {
	if l == nil {
		return nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil
	}
	return b
}
