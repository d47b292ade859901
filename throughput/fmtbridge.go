package throughput

import (
	"io"

	"github.com/netperfkit/netperfkit/internal/thrfmt"
)

// init hands the iperf3 renderers, which this package's server needs for
// get_server_output, to throughput/iperf3fmt, their public face. It only
// fills in an internal table of this package's own functions.
func init() {
	thrfmt.Register(thrfmt.Funcs[Result, Config, Interval]{
		Text: iperfText,
		JSON: iperfJSON,
		NewTextReport: func(w io.Writer, cfg *Config, format byte, server, verbose bool) any {
			return newTextReport(w, cfg, textOptions{Format: format, Server: server, Verbose: verbose})
		},
		FormatJitter: formatJitter,
		Sliver:       sliver,
	})
}
