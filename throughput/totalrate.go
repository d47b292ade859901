package throughput

import (
	"fmt"
	"math"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// ServerConfig.TotalBitrateWindow's default and bounds: iperf3 3.21's
// default averaging window and its MIN_INTERVAL and MAX_INTERVAL.
const (
	defaultRateWindow = 5 * time.Second
	minRateWindow     = 100 * time.Millisecond
	maxRateWindow     = 60 * time.Second
)

// requestedTotal is the total rate in bits/s a client's parameters ask for
// over streams streams (both directions already counted): its per-stream
// rate times the streams, as iperf3 3.21 computes it (its --fq-rate is
// not counted there either). It is computed in float64, where the product
// of an int64 and at most maxStreams cannot wrap, as 3.21's unsigned
// product can (128 streams of 2^57 bits/s ask for 0 there).
func requestedTotal(streams int64, p *iperfwire.Params) float64 {
	return float64(streams) * float64(max(p.Bandwidth, 0))
}

// rateWindow polices a running test's total rate the way iperf3 3.21's
// server does (iperf_check_total_rate): each report interval's bytes,
// every stream in both directions, go into a window of the last n
// intervals, n being the window over the interval, rounded, at least one;
// once n intervals have passed, their average above the limit ends the
// test. It divides by the intervals' measured lengths where 3.21 divides
// by n nominal intervals, so that the short interval cut at the end of the
// omit period counts for what it is. Not safe for concurrent use: the
// reporter alone feeds it.
type rateWindow struct {
	limit float64 // bits/s
	bytes []int64 // ring of the last intervals' bytes
	spans []time.Duration
	seen  int // intervals added
}

func newRateWindow(limit float64, window, interval time.Duration) *rateWindow {
	n := 1
	if interval > 0 && window > interval {
		n = int(math.Round(float64(window) / float64(interval)))
	}
	return &rateWindow{limit: limit, bytes: make([]int64, n), spans: make([]time.Duration, n)}
}

// add takes one interval's bytes and length and returns an error matching
// ErrTotalRate when the window's average is above the limit.
func (w *rateWindow) add(bytes int64, span time.Duration) error {
	i := w.seen % len(w.bytes)
	w.bytes[i], w.spans[i] = bytes, span
	w.seen++
	if w.seen < len(w.bytes) {
		return nil
	}
	var total float64
	var length time.Duration
	for i := range w.bytes {
		total += float64(w.bytes[i])
		length += w.spans[i]
	}
	if length <= 0 {
		return nil
	}
	if bps := total * 8 / length.Seconds(); bps > w.limit {
		return fmt.Errorf("%w: %.0f bits/s over the last %v, limit %.0f bits/s",
			ErrTotalRate, bps, length.Round(time.Millisecond), w.limit)
	}
	return nil
}

// ivTotalBytes is an interval's bytes over every stream, both directions.
func ivTotalBytes(iv *Interval) int64 {
	var n int64
	for _, s := range iv.Streams {
		n += s.Bytes
	}
	return n
}
