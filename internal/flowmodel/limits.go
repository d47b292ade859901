package flowmodel

// TCPLimits says what held a TCP sender back, from the kernel's own
// accounting (linux TCP_INFO, 4.19 or later): how much of the time the
// sender was busy and how much of it it stalled on the receiver's window or
// on its own send buffer, and how much of what it sent was sent again.
//
// The kernel counters are cumulative; these are their differences over one
// interval (StreamInterval.Limits) or over the counted time of the test
// (StreamResult.Limits, Summary.Limits). A nil *TCPLimits means unknown:
// the sender is not on linux, its kernel predates the counters, it is a
// stock iperf3 on the far end, or the stream is UDP.
//
// The time fractions nest: RwndLimited and SndbufLimited are parts of Busy,
// and what remains of Busy is time the congestion window (or pacing) set
// the pace. 1-Busy is time the sender had nothing to send: its application
// did not keep up. The kernel keeps these clocks in jiffies (1-10 ms), so a
// fraction of a short interval is that coarse.
type TCPLimits struct {
	// Busy is the fraction of the time (0..1) the sender had data queued
	// or in flight (tcpi_busy_time).
	Busy float64 `json:"busy_fraction"`
	// RwndLimited is the fraction of the time (0..1) the sender stalled
	// because the receiver's advertised window was full (tcpi_rwnd_limited).
	RwndLimited float64 `json:"rwnd_limited_fraction"`
	// SndbufLimited is the fraction of the time (0..1) the sender stalled
	// because its own send buffer was full (tcpi_sndbuf_limited).
	SndbufLimited float64 `json:"sndbuf_limited_fraction"`
	// Retransmitted is the fraction (0..1) of the bytes the sender put on
	// the wire that were retransmissions (tcpi_bytes_retrans over
	// tcpi_bytes_sent): a rate, where Counts.Retransmits is a count of
	// segments whose size depends on the path (64 KB on loopback).
	Retransmitted float64 `json:"retransmitted_fraction"`
	// DeliveryRate is the kernel's latest delivery-rate sample at the end
	// of the interval or test, in bits per second (tcpi_delivery_rate);
	// for a Summary, the sum over its streams.
	DeliveryRate float64 `json:"delivery_rate_bits_per_second"`
}

// WeighLimits combines limits that each stand for streams[i] streams which
// sent sent[i] bytes: the time fractions averaged over the streams, the
// retransmitted fraction weighted by the bytes, the delivery rates summed.
// It is nil when any are unknown, or there are none.
func WeighLimits(ls []*TCPLimits, streams, sent []int64) *TCPLimits {
	if len(ls) == 0 || len(ls) != len(sent) || len(ls) != len(streams) {
		return nil
	}
	var c TCPLimits
	var w, n float64
	for i, l := range ls {
		if l == nil || streams[i] < 1 {
			return nil
		}
		k := float64(streams[i])
		c.Busy += l.Busy * k
		c.RwndLimited += l.RwndLimited * k
		c.SndbufLimited += l.SndbufLimited * k
		c.DeliveryRate += l.DeliveryRate
		c.Retransmitted += l.Retransmitted * float64(sent[i])
		w += float64(sent[i])
		n += k
	}
	c.Busy, c.RwndLimited, c.SndbufLimited = c.Busy/n, c.RwndLimited/n, c.SndbufLimited/n
	if w > 0 {
		c.Retransmitted /= w
	} else {
		c.Retransmitted = 0
	}
	return &c
}

// Percent is part as a percentage of whole, 0 when whole is not positive.
func Percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
