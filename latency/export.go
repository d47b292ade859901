package latency

import (
	"errors"
	"fmt"
	"io"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// EncodeHistogram returns the compressed base64 form of h ("HISTFAAA..."),
// HdrHistogram's V2 compressed encoding that the Java and C tools and
// HistogramLogProcessor read. Values are whatever h holds (nanoseconds for a
// Recorder's Snapshot).
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	if h == nil {
		return "", errors.New("latency: nil histogram")
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("latency: encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram parses the compressed base64 form written by
// EncodeHistogram or by the Java and C HdrHistogram libraries.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("latency: decode histogram: %w", err)
	}
	return h, nil
}

// HistogramLog writes the HdrHistogram interval log format (version 1.3),
// which HistogramLogProcessor, HdrHistogramVisualizer and the Go, Java and C
// log readers read: a header, then one line per interval with its start
// (seconds since the log's start), length, maximum (in milliseconds for
// nanosecond histograms) and compressed histogram. It is not safe for
// concurrent use.
type HistogramLog struct {
	lw    *hdrhistogram.HistogramLogWriter
	start time.Time
}

// NewHistogramLog writes the log header to w and returns a writer whose
// interval timestamps are relative to start.
func NewHistogramLog(w io.Writer, start time.Time) (*HistogramLog, error) {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	ms := start.UnixMilli()
	for _, f := range []func() error{
		lw.OutputLogFormatVersion,
		func() error { return lw.OutputComment("[Logged with netperfkit latency, values in nanoseconds]") },
		func() error { return lw.OutputStartTime(ms) },
		func() error { return lw.OutputBaseTime(ms) },
		lw.OutputLegend,
	} {
		if err := f(); err != nil {
			return nil, fmt.Errorf("latency: histogram log: %w", err)
		}
	}
	lw.SetBaseTime(ms)
	return &HistogramLog{lw: lw, start: start}, nil
}

// WriteInterval appends one interval, from..to, holding h (nanosecond
// values). h is not modified. tag, if not empty, labels the line and must
// not contain commas, spaces or line breaks.
func (l *HistogramLog) WriteInterval(h *hdrhistogram.Histogram, from, to time.Time, tag string) error {
	c := h.Clone()
	c.SetStartTimeMs(from.UnixMilli())
	c.SetEndTimeMs(to.UnixMilli())
	c.SetTag(tag)
	if err := l.lw.OutputIntervalHistogram(c); err != nil {
		return fmt.Errorf("latency: histogram log: %w", err)
	}
	return nil
}

// ReadHistogramLog reads every interval histogram of a log written by
// HistogramLog or another HdrHistogram implementation.
func ReadHistogramLog(r io.Reader) ([]*hdrhistogram.Histogram, error) {
	lr := hdrhistogram.NewHistogramLogReader(r)
	var out []*hdrhistogram.Histogram
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return out, fmt.Errorf("latency: histogram log: %w", err)
		}
		if h == nil {
			return out, nil
		}
		out = append(out, h)
	}
}

// WritePercentiles writes h's percentile distribution in the .hgrm text form
// that HdrHistogram's plotters read (Value, Percentile, TotalCount,
// 1/(1-Percentile), then a footer with mean, std-dev and max), with values
// converted from nanoseconds to microseconds and 5 ticks per half distance,
// as the Java tool prints by default.
func WritePercentiles(w io.Writer, h *hdrhistogram.Histogram) error {
	if _, err := h.PercentilesPrint(w, 5, 1000); err != nil {
		return fmt.Errorf("latency: percentiles: %w", err)
	}
	return nil
}
