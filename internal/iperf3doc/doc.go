// Package iperf3doc renders a throughput test as iperf3 writes it: the -J
// document and the text report. Package throughput's server needs these
// for clients that ask for its output (--get-server-output), and the
// public throughput/iperf3fmt offers them to users; it lives below both
// and reads throughput's own types from their one home, internal/flowmodel
// (throughput.Result is flowmodel.Result), so nothing is converted. The
// layering is in docs/architecture.md, the dependency rule in
// internal/depcheck.
package iperf3doc
