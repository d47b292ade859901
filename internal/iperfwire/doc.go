// Package iperfwire is iperf3's wire format: the control states, the
// cookie, the length-prefixed JSON messages, the parameter and results
// objects, SERVER_ERROR codes and the UDP datagram header and hello. It
// only encodes and decodes; deadlines, limits and the protocol's order are
// package throughput's business. Every decoder has a fuzz target.
package iperfwire
