// Package throughput generates TCP and UDP flows and measures them, and speaks
// iperf3's control protocol as a client (Run) and as a server (Serve), so a Go
// program can test against a stock iperf3 server and stock iperf3 clients can
// test against a Go server.
//
// Results are plain structs (Result) with snake_case JSON tags; IperfJSON
// renders a Result in the shape of iperf3's -J document so that scripts which
// parse iperf3 keep working. Progress is delivered through Config.OnInterval,
// never printed.
//
// Linux-only measurements (TCP_INFO, UDP GSO/GRO) sit behind build tags; on
// other platforms the results carry a "not available on this platform" note
// instead of failing.
package throughput
