// Package thrfmt hands throughput's iperf3 renderers to throughput/iperf3fmt.
//
// The renderers live in package throughput because its server sends iperf3's
// -J document and text report back to clients that ask for the server's
// output (--get-server-output), and throughput's own client reads them; so
// throughput cannot import the public throughput/iperf3fmt, which imports
// throughput for its types. throughput registers its renderers here when
// it is initialised, and iperf3fmt, their public face, fetches them with
// throughput's types, so that they are not part of throughput's API.
package thrfmt

import (
	"io"
	"time"
)

// Funcs are throughput's renderers, in throughput's types: R is
// throughput.Result, C throughput.Config and I throughput.Interval.
type Funcs[R, C, I any] struct {
	// Text is the whole result as iperf3 3.21's text report.
	Text func(r *R) string
	// JSON is the result as iperf3's -J document.
	JSON func(r *R) ([]byte, error)
	// NewTextReport returns a live text report; its dynamic type has the
	// methods of iperf3fmt.TextReport.
	NewTextReport func(w io.Writer, cfg *C, format byte, server, verbose bool) any
	// FormatJitter is a jitter as iperf3 prints it, in milliseconds.
	FormatJitter func(d time.Duration) string
	// Sliver reports whether an interval is one 3.21 leaves out.
	Sliver func(iv I, every time.Duration) bool
}

var funcs any

// Register records throughput's renderers; throughput calls it once.
func Register[R, C, I any](f Funcs[R, C, I]) { funcs = f }

// Get returns the renderers Register recorded. It panics when they are
// not of these types: a build that mixes packages, never a user's input.
func Get[R, C, I any]() Funcs[R, C, I] { return funcs.(Funcs[R, C, I]) }
