// Package rpm holds the IETF responsiveness draft's arithmetic
// (draft-ietf-ippm-responsiveness) that latency/responsiveness, cache and
// throughput share: the 95% trimmed mean of probe round trips and round
// trips per minute.
package rpm

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Trim is the percentile at which the draft trims probe round trips before
// averaging them: TrimmedMean(h, Trim).
const Trim = 95

// TrimmedMean returns the mean of the values of h at or below its pct
// percentile (0 < pct <= 100), each bucket counted at its midpoint: the
// slowest (100-pct)% are left out. It returns zero for an empty or nil
// histogram.
func TrimmedMean(h *hdrhistogram.Histogram, pct float64) time.Duration {
	if h == nil || h.TotalCount() == 0 || !(pct > 0) {
		return 0
	}
	keep := int64(math.Ceil(float64(h.TotalCount()) * min(pct, 100) / 100))
	var sum float64
	left := keep
	for _, b := range h.Distribution() {
		if left == 0 {
			break
		}
		n := min(b.Count, left)
		sum += float64(n) * (float64(b.From) + float64(b.To)) / 2
		left -= n
	}
	return time.Duration(sum / float64(keep-left))
}

// RPM returns round trips per minute for a round-trip time d, the unit of
// networkQuality's responsiveness: 60 s / d. It returns zero for d <= 0.
func RPM(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(time.Minute) / float64(d)
}

// Combine is the draft's RPM without TLS from the trimmed means of the
// connect and request phases of new connections and of the self probes
// (an established connection, or the loaded connections themselves): 60 s
// divided by 1/4 x (connect + request) + 1/2 x self. It is zero unless all
// three are positive.
func Combine(connect, request, self time.Duration) float64 {
	if connect <= 0 || request <= 0 || self <= 0 {
		return 0
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return RPM(time.Duration(((us(connect)+us(request))/4 + us(self)/2) * 1e3))
}
