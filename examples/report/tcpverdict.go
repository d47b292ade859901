package main

import (
	"fmt"
	"strings"

	"github.com/netperfkit/netperfkit/throughput"
)

// Thresholds of the TCP rule, from the sender kernel's accounting
// (throughput.TCPLimits); README's E2 states the rule.
const (
	// stallShare: a stall (the receiver's window, the sender's buffer, or
	// nothing to send) that held the sender back at least this share of
	// the time decides, in that order: a window held shut keeps the
	// sender's congestion window, and with it the send buffer the kernel
	// sizes from it, small, so the sending thread must refill it every
	// round trip and its wake-ups show as idle time.
	stallShare = 0.25
	// cwndShare: a sender busy and stalled on neither window nor buffer
	// this share of the time was paced by its congestion window.
	cwndShare = 0.5
	// netRetrans: a cwnd-limited flow that retransmitted more than this
	// share of the bytes it sent was held back by the network's losses.
	netRetrans = 0.01
)

// sides are the sending and the receiving side of a row's flows.
func sides(direction string) (send, recv string) {
	if direction == "download" {
		return "server", "client"
	}
	return "client", "server"
}

// tcpLimitedBy judges a TCP row: the stated limit when the row is near it,
// then what the sender's kernel says held it back (r.TCPLimits), then the
// generator's CPU. Without the kernel's accounting (a stock iperf3 sender,
// or not linux) only the limit and the CPU can decide: a retransmit count
// alone never does.
func tcpLimitedBy(r *MatrixRow, near bool, cpus int) (by, detail string) {
	l := r.TCPLimits
	cores := max(1, min(r.Streams, cpus))
	cpu := ""
	if r.SenderCPUPercent >= 0 && r.SenderCPUPercent >= cpuSaturated*float64(cores) {
		cpu = fmt.Sprintf("%.0f%% of %d core(s)", r.SenderCPUPercent, cores)
	}
	switch {
	case near:
		return "limit", joinDetail(fmt.Sprintf("%.0f%% of it", r.PercentOfLimit), describeLimits(l, ""))
	case l == nil && cpu != "":
		return "generator CPU", cpu
	case l == nil:
		return "", ""
	}
	send, recv := sides(r.Direction)
	idle := 1 - l.Busy
	cwnd := l.Busy - l.RwndLimited - l.SndbufLimited
	switch {
	case l.RwndLimited >= stallShare:
		return "receiver window (" + recv + ")", describeLimits(l, "rwnd")
	case l.SndbufLimited >= stallShare:
		return "sender buffer (" + send + ")", describeLimits(l, "sndbuf")
	case idle >= stallShare && cpu != "":
		return "generator CPU", joinDetail(cpu, describeLimits(l, "idle"))
	case idle >= stallShare:
		return "sender application (" + send + ")", describeLimits(l, "idle")
	case cwnd >= cwndShare && l.Retransmitted > netRetrans:
		return "network", describeLimits(l, "cwnd")
	case cpu != "":
		return "generator CPU", joinDetail(cpu, describeLimits(l, ""))
	}
	return "", ""
}

// describeLimits writes the fractions that decide a TCP verdict, lead
// first ("rwnd", "sndbuf", "idle", "cwnd" or "" for none); "" when l is nil.
func describeLimits(l *throughput.TCPLimits, lead string) string {
	if l == nil {
		return ""
	}
	pc := func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
	parts := map[string]string{
		"rwnd":   "rwnd-limited " + pc(l.RwndLimited),
		"sndbuf": "sndbuf-limited " + pc(l.SndbufLimited),
		"idle":   "idle " + pc(1-l.Busy),
		"cwnd":   "cwnd-limited " + pc(l.Busy-l.RwndLimited-l.SndbufLimited),
	}
	out := []string{}
	if lead != "" {
		out = append(out, parts[lead]+" of the time")
	}
	for _, k := range []string{"rwnd", "sndbuf", "idle", "cwnd"} {
		if k != lead {
			out = append(out, parts[k])
		}
	}
	out = append(out, fmt.Sprintf("%.2f%% of bytes retransmitted", 100*l.Retransmitted))
	return strings.Join(out, ", ")
}

func joinDetail(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}
