package main

import (
	"testing"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/stretchr/testify/assert"
)

// TestTCPLimitedBy: the TCP rule decides from the sender kernel's
// fractions, names the side that held the flow back, and never from a
// retransmit count alone.
func TestTCPLimitedBy(t *testing.T) {
	lim := func(busy, rwnd, sndbuf, retr float64) *throughput.TCPLimits {
		return &throughput.TCPLimits{Busy: busy, RwndLimited: rwnd, SndbufLimited: sndbuf, Retransmitted: retr, DeliveryRate: 1e9}
	}
	row := func(dir string, recv, cpu float64, retrCount int64, l *throughput.TCPLimits) *MatrixRow {
		return &MatrixRow{Protocol: "tcp", Direction: dir, Streams: 1, ReceivedBitsPerSecond: recv, PercentOfLimit: 100 * recv / 5e9,
			SenderCPUPercent: cpu, Retransmits: retrCount, TCPLimits: l}
	}
	for _, c := range []struct {
		name       string
		row        *MatrixRow
		by, detail string
	}{
		{"the receiver's window, upload: the server receives", row("upload", 1e9, 20, 0, lim(0.98, 0.87, 0, 0)),
			"receiver window (server)", "rwnd-limited 87% of the time, sndbuf-limited 0%, idle 2%, cwnd-limited 11%, 0.00% of bytes retransmitted"},
		{"the receiver's window, download: the client receives", row("download", 1e9, 20, 0, lim(0.98, 0.87, 0, 0)),
			"receiver window (client)", "rwnd-limited 87% of the time, sndbuf-limited 0%, idle 2%, cwnd-limited 11%, 0.00% of bytes retransmitted"},
		{"the sender's buffer, download: the server sends", row("download", 1e9, 20, 0, lim(0.99, 0.05, 0.6, 0)),
			"sender buffer (server)", "sndbuf-limited 60% of the time, rwnd-limited 5%, idle 1%, cwnd-limited 34%, 0.00% of bytes retransmitted"},
		{"nothing to send: the sending application", row("upload", 1e8, 20, 0, lim(0.1, 0, 0, 0)),
			"sender application (client)", "idle 90% of the time, rwnd-limited 0%, sndbuf-limited 0%, cwnd-limited 10%, 0.00% of bytes retransmitted"},
		{"nothing to send with a saturated core: the generator's CPU", row("upload", 2e9, 97, 0, lim(0.6, 0, 0, 0)),
			"generator CPU", "97% of 1 core(s); idle 40% of the time, rwnd-limited 0%, sndbuf-limited 0%, cwnd-limited 60%, 0.00% of bytes retransmitted"},
		{"cwnd-limited with losses: the network", row("upload", 2e9, 20, 900, lim(1, 0.02, 0, 0.03)),
			"network", "cwnd-limited 98% of the time, rwnd-limited 2%, sndbuf-limited 0%, idle 0%, 3.00% of bytes retransmitted"},
		{"cwnd-limited, 181 retransmits but a negligible rate: nothing named", row("upload", 2e9, 20, 181, lim(0.9, 0.1, 0, 0.0002)), "", ""},
		{"one retransmit never decides", row("download", 2e9, 20, 1, lim(0.95, 0.1, 0.05, 0.00001)), "", ""},
		{"a window held shut a third of the time comes before the idle time it causes", row("download", 2e8, 20, 0, lim(0.46, 0.4, 0, 0)),
			"receiver window (client)", "rwnd-limited 40% of the time, sndbuf-limited 0%, idle 54%, cwnd-limited 6%, 0.00% of bytes retransmitted"},
		{"a buffer stall before idle time", row("upload", 2e8, 20, 0, lim(0.6, 0.1, 0.3, 0)),
			"sender buffer (client)", "sndbuf-limited 30% of the time, rwnd-limited 10%, idle 40%, cwnd-limited 20%, 0.00% of bytes retransmitted"},
		{"stalls below a quarter of the time each decide nothing", row("upload", 2e9, 20, 0, lim(0.76, 0.2, 0.2, 0)), "", ""},
		{"losses, but the window held it back most: the receiver", row("upload", 2e9, 20, 50, lim(1, 0.6, 0, 0.05)),
			"receiver window (server)", "rwnd-limited 60% of the time, sndbuf-limited 0%, idle 0%, cwnd-limited 40%, 5.00% of bytes retransmitted"},
		{"near the stated limit: the limit, with the fractions", row("upload", 4.8e9, 20, 30, lim(1, 0, 0, 0.002)),
			"limit", "96% of it; rwnd-limited 0%, sndbuf-limited 0%, idle 0%, cwnd-limited 100%, 0.20% of bytes retransmitted"},
		{"near the limit without the kernel's accounting", row("upload", 4.8e9, 20, 30, nil), "limit", "96% of it"},
		{"no accounting (a stock iperf3 sender): retransmits do not decide", row("download", 2e9, 20, 500, nil), "", ""},
		{"no accounting, saturated core: the generator's CPU", row("download", 2e9, 95, 500, nil), "generator CPU", "95% of 1 core(s)"},
		{"no stall and no loss but a saturated core", row("upload", 2e9, 96, 0, lim(0.9, 0, 0, 0)),
			"generator CPU", "96% of 1 core(s); rwnd-limited 0%, sndbuf-limited 0%, idle 10%, cwnd-limited 90%, 0.00% of bytes retransmitted"},
	} {
		by, detail := limitedBy(c.row, 5e9, 2)
		assert.Equal(t, c.by, by, c.name)
		assert.Equal(t, c.detail, detail, c.name)
	}
}

// TestTCPLimitedByAboveLimit: a row past the stated limit is judged by the
// sender's fractions and says the limit was not in effect.
func TestTCPLimitedByAboveLimit(t *testing.T) {
	r := &MatrixRow{Protocol: "tcp", Direction: "upload", Streams: 1, ReceivedBitsPerSecond: 20e9, PercentOfLimit: 400, SenderCPUPercent: -1,
		TCPLimits: &throughput.TCPLimits{Busy: 0.99, RwndLimited: 0.7}}
	by, detail := limitedBy(r, 5e9, 2)
	assert.Equal(t, "receiver window (server)", by)
	assert.Equal(t, "rwnd-limited 70% of the time, sndbuf-limited 0%, idle 1%, cwnd-limited 29%, 0.00% of bytes retransmitted; 400% of the stated limit: it was not in effect", detail)
}
