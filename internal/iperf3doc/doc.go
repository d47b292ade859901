// Package iperf3doc renders a throughput test as iperf3 writes it: the -J
// document and the text report. Package throughput's server needs these
// for clients that ask for its output (--get-server-output), and the
// public throughput/iperf3fmt offers them to users; neither can import the
// other for them (iperf3fmt imports throughput for its types), so they
// live here, below both, and read a model of the result instead of
// throughput's types, which this package cannot import.
//
// Both importers turn throughput's values into the model the same way,
// through From: the value's own JSON encoding, decoded into the model's
// types, whose keys mirror throughput's (throughput's
// TestIperf3docModelReadsEveryField fails when one drifts). A converter
// that read throughput's fields would have to live in throughput, out of
// iperf3fmt's reach, or be written twice; a conversion by assignment does
// not reach through throughput's nested and embedded types. The JSON form
// is complete (throughput's tests read every field of a Result through
// it) and lossless for what the renderers read: Go writes floats and
// times so that they read back exactly. The one value it cannot carry, a
// NaN or infinite figure, no measurement produces: From returns the
// encoder's error for it, which JSON passes on and the text renderers
// turn into no output.
package iperf3doc
