package throughput

import "github.com/netperfkit/netperfkit/internal/iperf3doc"

// iperfJSON is r as iperf3's -J document, which the server sends a client
// that asks for its output (get_server_output) in JSON.
func iperfJSON(r *Result) ([]byte, error) { return iperf3doc.JSON(r) }

// iperfText is r as iperf3's text report, which the server sends a client
// that asks for its output in text.
func iperfText(r *Result) string { return iperf3doc.Text(r) }
