package throughput

import (
	"fmt"
	"math"
	"strings"
)

// iperf3's unit_snprintf: bytes in 1024 steps, bits in 1000 steps, three
// significant digits.
func unitFmt(v float64, base float64, units []string) string {
	i := 0
	for v >= base*0.99995 && i < len(units)-1 {
		v /= base
		i++
	}
	switch {
	case v < 9.995:
		return fmt.Sprintf("%4.2f %s", v, units[i])
	case v < 99.95:
		return fmt.Sprintf("%4.1f %s", v, units[i])
	}
	return fmt.Sprintf("%4.0f %s", v, units[i])
}

func fmtBytes(b int64) string {
	return unitFmt(float64(b), 1024, []string{"Bytes", "KBytes", "MBytes", "GBytes", "TBytes"})
}

func fmtBits(bps float64) string {
	return unitFmt(bps, 1000, []string{"bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"})
}

// IntervalHeader is the column header iperf3 prints above interval lines.
func IntervalHeader(r *Result) string {
	if r != nil && r.Config.UDP {
		return "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
	}
	return "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
}

func streamTag(id int) string { return fmt.Sprintf("[%3d]", socketOf(id)) }

// IntervalText formats one interval report as iperf3's text lines: one per
// stream, then a [SUM] line per direction when there are several streams.
// udp selects the UDP columns.
func IntervalText(iv Interval, udp bool) string {
	var b strings.Builder
	line := func(tag string, c *Counts, sender bool, ti *TCPInfo) {
		fmt.Fprintf(&b, "%s %6.2f-%-6.2f sec  %s  %s", tag, secs(iv.Start), secs(iv.End), fmtBytes(c.Bytes), fmtBits(c.BitsPerSecond))
		switch {
		case udp && sender:
			fmt.Fprintf(&b, "  %d", c.Packets)
		case udp:
			fmt.Fprintf(&b, "  %s ms  %d/%d (%.2g%%)", jitterText(ms(c.Jitter)), c.LostPackets, c.Packets, percent(c.LostPackets, c.Packets))
		case ti != nil && ti.SndCwndBytes > 0:
			fmt.Fprintf(&b, "  %4d   %s", c.Retransmits, fmtBytes(ti.SndCwndBytes))
		case ti != nil:
			fmt.Fprintf(&b, "  %4d", c.Retransmits)
		}
		if iv.Omitted {
			b.WriteString("  (omitted)")
		}
		b.WriteString("\n")
	}
	for _, s := range iv.Streams {
		line(streamTag(s.ID), &s.Counts, s.Sender, s.TCP)
	}
	if len(iv.Streams) > 1 {
		for _, d := range []struct {
			sum *Counts
			rev bool
		}{{iv.Upload, false}, {iv.Download, true}} {
			if d.sum == nil {
				continue
			}
			sender := false
			var info *TCPInfo
			for _, s := range iv.Streams {
				if s.Reverse == d.rev {
					sender = s.Sender
					if s.TCP != nil {
						info = &TCPInfo{} // a retransmit column without a cwnd
					}
				}
			}
			line("[SUM]", d.sum, sender, info)
		}
	}
	return b.String()
}

// SummaryText formats the final sender and receiver lines as iperf3 does
// after the dashed separator.
func SummaryText(r *Result) string {
	var b strings.Builder
	b.WriteString("- - - - - - - - - - - - - - - - - - - - - - - - -\n")
	udp := r.Config.UDP
	if udp {
		b.WriteString(IntervalHeader(r))
	} else {
		b.WriteString("[ ID] Interval           Transfer     Bitrate         Retr\n")
	}
	line := func(tag string, secs float64, bytes int64, bits float64, extra, role string) {
		fmt.Fprintf(&b, "%s %6.2f-%-6.2f sec  %s  %s  %s  %s\n", tag, 0.0, secs, fmtBytes(bytes), fmtBits(bits), extra, role)
	}
	emit := func(tag string, t *Totals) {
		d := secs(t.Duration)
		if udp {
			line(tag, d, t.Sent.Bytes, t.Sent.BitsPerSecond, fmt.Sprintf("%.3f ms  %d/%d (0%%)", 0.0, 0, t.Sent.Packets), "sender")
			line(tag, d, t.Received.Bytes, t.Received.BitsPerSecond, fmt.Sprintf("%s ms  %d/%d (%.2g%%)", jitterText(ms(t.Received.Jitter)), t.Received.LostPackets, t.Received.Packets, percent(t.Received.LostPackets, t.Received.Packets)), "receiver")
			return
		}
		r := "    "
		if t.Sent.Retransmits >= 0 {
			r = fmt.Sprintf("%4d", t.Sent.Retransmits)
		}
		line(tag, d, t.Sent.Bytes, t.Sent.BitsPerSecond, r+"           ", "sender")
		line(tag, d, t.Received.Bytes, t.Received.BitsPerSecond, "               ", "receiver")
	}
	for _, s := range r.Streams {
		emit(streamTag(s.ID), &s.Totals)
	}
	for _, sm := range []*Summary{r.Upload, r.Download} {
		if sm == nil || (sm.Streams < 2 && len(r.Streams) < 2) {
			continue
		}
		emit("[SUM]", &sm.Totals)
	}
	for _, sm := range []*Summary{r.Upload, r.Download} {
		if sm != nil && sm.SenderLimited {
			fmt.Fprintf(&b, "note: the sender reached %s of a %s target: the generator, not the network, limited this test\n",
				fmtBits(sm.Sent.BitsPerSecond), fmtBits(r.Config.rate()*float64(sm.Streams)))
		}
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "RTT under load (%s, %d samples): p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n",
			l.Network, l.Observations, l.P50Us, l.P99Us, l.P999Us, l.MaxUs)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// IperfText renders a whole result as iperf3's text report: header,
// interval lines, separator and summary.
func IperfText(r *Result) string {
	var b strings.Builder
	b.WriteString(IntervalHeader(r))
	for _, iv := range r.Intervals {
		b.WriteString(IntervalText(iv, r.Config.UDP))
	}
	b.WriteString(SummaryText(r))
	return b.String()
}

// jitterText prints a jitter in milliseconds with iperf3's three decimals,
// or two significant digits below 0.001 ms, so that a nonzero measurement
// never reads 0.000.
func jitterText(v float64) string {
	if v <= 0 || v >= 0.001 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.*f", int(math.Ceil(-math.Log10(v)))+1, v)
}
