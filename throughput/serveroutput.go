package throughput

import "github.com/netperfkit/netperfkit/internal/iperf3doc"

// iperfJSON is r as iperf3's -J document, which the server sends a client
// that asks for its output (get_server_output) in JSON.
func iperfJSON(r *Result) ([]byte, error) {
	m, err := iperf3doc.From[iperf3doc.Result](r)
	if err != nil {
		return nil, err
	}
	return iperf3doc.JSON(&m)
}

// iperfText is r as iperf3's text report, which the server sends a client
// that asks for its output in text; "" for a result iperf3doc cannot read.
func iperfText(r *Result) string {
	m, err := iperf3doc.From[iperf3doc.Result](r)
	if err != nil {
		return ""
	}
	return iperf3doc.Text(&m)
}
