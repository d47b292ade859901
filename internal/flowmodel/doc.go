// Package flowmodel is the one home of a throughput test's settings and
// result: Config and the option structs it embeds, Result and every type it
// holds (Summary, Counts, Interval, Ledger, TCPLimits ...), and Event.
// Package throughput re-exports each as a type alias (throughput.Result is
// flowmodel.Result), so its users keep writing throughput's names, and
// internal/iperf3doc renders the same values without a conversion. It is a
// leaf: it imports only throughput/iperf3auth (the credentials a Config
// carries). The layering is in docs/architecture.md; the dependency rule
// in internal/depcheck.
//
// The behaviour that goes with these types (defaults, validation, the wire
// parameters) stays in throughput: what lives here is data and the methods
// a user calls on it (Result.Total, the Ledger's readers).
package flowmodel
