// Package iperf3fmt renders throughput's results as iperf3 3.21 writes
// them, so that programs and scripts which read iperf3's output keep
// working with results measured by package throughput:
//
//   - Text: a finished throughput.Result as iperf3's text report;
//   - JSON: a throughput.Result as iperf3's -J document;
//   - TextReport: the same text written live from a run's events
//     (throughput.Config.OnEvent), as iperf3's client and server print it;
//   - JSONStream: iperf3 3.21's --json-stream output from the same events.
//
// Jitter is written as iperf3 writes it, in milliseconds with three
// decimals (two significant digits below 0.001 ms, so that a measured
// jitter never reads as 0.000), and the reports leave out the short last
// interval, as 3.21 does.
//
// examples/iperf3, a drop-in for iperf3 3.21's command line, is built on
// it. The package imports only throughput, the renderers it shares with
// throughput's server (an internal package) and the standard library;
// docs/conventions.md states the conventions it shares with the rest of
// netperfkit. Its functions are safe for concurrent use; a TextReport is
// not.
package iperf3fmt

import (
	"errors"
	"io"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
	"github.com/netperfkit/netperfkit/throughput"
)

// Text renders a whole result as iperf3 3.21's text report, from the view
// of the result's Role: interval lines, the sender/receiver summary, and
// what netperfkit adds (a note when the sender limited the test, and the
// result's notes). A nil r gives "".
func Text(r *throughput.Result) string {
	if r == nil {
		return ""
	}
	return iperf3doc.Text(r)
}

// JSON renders r as iperf3's -J document (start, intervals, end with
// sum_sent/sum_received for TCP, sum with jitter_ms/lost_packets/
// lost_percent for UDP, the *_bidir_reverse sums with bidir, and
// cpu_utilization_percent). Interval times restart at zero after the omit
// period, as in iperf3. A nil r is an error, and so is a NaN or infinite
// figure, as encoding/json reports it.
func JSON(r *throughput.Result) ([]byte, error) {
	if r == nil {
		return nil, errNilResult
	}
	return iperf3doc.JSON(r)
}

// Options choose how a TextReport reads. The zero Options is a client's
// report with adaptive units.
type Options struct {
	// Format is iperf3's -f: 'k', 'm', 'g', 't' show bitrates in a fixed
	// unit of bits, 'K', 'M', 'G', 'T' in bytes; 0 or 'a' adapts the unit.
	Format byte
	// Server writes the server's view: roles, headers and [RX-S]/[TX-S]
	// tags as a server prints them.
	Server bool
	// Verbose adds 3.21's -V lines ("Test Complete", CPU utilization).
	Verbose bool
}

// TextReport writes iperf3 3.21's human-readable report (the report_*
// formats of its src/iperf_locale.c): connection lines, interval lines
// with [SUM] lines for several streams, and the sender/receiver summary.
// Feed it a test's events (throughput.Config.OnEvent or
// ServerConfig.OnEvent) as they come. It is not safe for concurrent use;
// throughput delivers a test's events from one goroutine. The zero
// TextReport writes nothing; make one with NewTextReport.
type TextReport struct {
	r *iperf3doc.TextReport
}

// NewTextReport returns a report, written to w, of a test run with cfg
// (for a server, the Config of the test's Result; nil means defaults).
func NewTextReport(w io.Writer, cfg *throughput.Config, o Options) *TextReport {
	if w == nil {
		w = io.Discard
	}
	if cfg == nil {
		cfg = &throughput.Config{}
	}
	return &TextReport{r: iperf3doc.NewTextReport(w, cfg, iperf3doc.Options{Format: o.Format, Server: o.Server, Verbose: o.Verbose})}
}

// Connecting writes what 3.21's client writes before its streams connect.
func (t *TextReport) Connecting(host string, port int) {
	if t != nil && t.r != nil {
		t.r.Connecting(host, port)
	}
}

// Connected writes one "[  4] local A port P connected to B port Q" line.
func (t *TextReport) Connected(s throughput.StreamResult) {
	if t != nil && t.r != nil {
		t.r.Connected(s)
	}
}

// Interval writes one interval report: a line per stream and, with
// several streams per direction, a [SUM] line per direction. It leaves out
// a sliver (a short, empty last interval), as 3.21 does.
func (t *TextReport) Interval(iv throughput.Interval) {
	if t != nil && t.r != nil {
		t.r.Interval(iv)
	}
}

// Summary writes the separator, the summary header and each stream's
// sender and receiver lines, then the [SUM] lines of each direction. A
// nil r writes nothing.
func (t *TextReport) Summary(r *throughput.Result) {
	if t != nil && t.r != nil && r != nil {
		t.r.Summary(r)
	}
}

// Extras writes what netperfkit adds after iperf3's summary: a note when
// the generator rather than the network limited a direction, and the
// result's notes. A nil r writes nothing.
func (t *TextReport) Extras(r *throughput.Result) {
	if t != nil && t.r != nil && r != nil {
		t.r.Extras(r)
	}
}

// Done ends a client's report as 3.21 does ("iperf Done.").
func (t *TextReport) Done() {
	if t != nil && t.r != nil {
		t.r.Done()
	}
}

var errNilResult = errors.New("iperf3fmt: nil Result")
