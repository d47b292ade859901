// Package underload measures latency while throughput flows load the path:
// the composites that join package throughput's flows and package latency's
// probes.
//
//   - Run: a throughput test with an open-loop latency probe beside it,
//     for the RTT distribution under load (iperf3's issue 635); with
//     Config.Responsiveness set, the IETF responsiveness draft's probes
//     instead (new connections to an echo server, and the loaded
//     connections' own round trips from TCP_INFO), combined into RPM.
//
// It takes the flows as a throughput.Config and an echo server speaking
// sockperf's protocol (`sockperf server`, or a latency.Server). The package
// imports throughput and latency, and through them hdrhistogram-go and
// x/sys. The conventions it shares with every netperfkit package (context
// first, callbacks as config fields, time.Duration in Go, partial results
// on cancel) are in docs/conventions.md.
package underload
