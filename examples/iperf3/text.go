package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
)

// textReport writes iperf3 3.21's human-readable output (the report_*
// formats of its src/iperf_locale.c) from the library's interval reports and
// result. It is not safe for concurrent use; the library calls OnInterval
// from one goroutine.
type textReport struct {
	w       io.Writer
	format  byte // -f: k m g t (bits) K M G T (bytes); 'a' adaptive bits
	udp     bool
	bidir   bool
	reverse bool
	client  bool    // role: the client's view or the server's
	streams int     // -P: streams per direction
	omit    float64 // seconds; interval times restart after it
	verbose bool
	every   time.Duration // -i

	intervals int // interval groups printed so far
}

const separator = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

func newTextReport(w io.Writer, o *options) *textReport {
	f := o.format
	if f == 0 {
		f = 'a'
	}
	c := o.cfg
	return &textReport{w: w, format: f, udp: c.UDP, bidir: c.Bidir, reverse: c.Reverse, client: !o.server,
		streams: max(c.Streams, 1), omit: c.Omit.Seconds(), verbose: o.verbose, every: c.Interval}
}

// unitText is iperf3's unit_snprintf: a value in bytes shown in bits
// (lower-case format) or bytes (upper-case), in a fixed unit or, for 'a' and
// 'A', the largest unit that keeps it under 1000 (bits) or 1024 (bytes).
// The caller appends "s" or "s/sec" as iperf3's formats do.
func unitText(bytes float64, format byte) string {
	bits := format >= 'a' && format <= 'z'
	v, base := bytes, 1024.0
	labels := []string{"Byte", "KByte", "MByte", "GByte", "TByte"}
	if bits {
		v, base = bytes*8, 1000
		labels = []string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}
	}
	conv := strings.IndexByte("bkmgt", lower(format))
	if conv < 0 { // adaptive
		conv = 0
		for t := v; t >= base && conv < 4; conv++ {
			t /= base
		}
	}
	for range conv {
		v /= base
	}
	switch {
	case v < 9.995:
		return fmt.Sprintf("%4.2f %s", v, labels[conv])
	case v < 99.95:
		return fmt.Sprintf("%4.1f %s", v, labels[conv])
	}
	return fmt.Sprintf("%4.0f %s", v, labels[conv])
}

// connecting prints what 3.21's client prints before its streams connect.
func (t *textReport) connecting(host string, port int) {
	fmt.Fprintf(t.w, "Connecting to host %s, port %d\n", host, port)
	if t.reverse {
		fmt.Fprintf(t.w, "Reverse mode, remote host %s is sending\n", host)
	}
}

// connected prints one "[  4] local A port P connected to B port Q" line.
func (t *textReport) connected(s throughput.StreamResult) {
	lh, lp := splitAddr(s.LocalAddr)
	rh, rp := splitAddr(s.RemoteAddr)
	fmt.Fprintf(t.w, "[%3d] local %s port %s connected to %s port %s\n", socketID(s.ID), lh, lp, rh, rp)
}

func splitAddr(a string) (host, port string) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, "0"
	}
	return h, p
}

// socketID is the number iperf3 shows in "[ ID]": its socket descriptor.
// The library numbers streams 1, 3, 4, ... as the protocol does; 3.21
// shows 4, 6, 7, ... for them on a fresh process, close enough to keep
// every column the same width.
func socketID(id int) int { return id + 3 }

func (t *textReport) roleTag(sender bool) string {
	if !t.bidir {
		return ""
	}
	side := "S"
	if t.client {
		side = "C"
	}
	if sender {
		return "[TX-" + side + "]"
	}
	return "[RX-" + side + "]"
}

// localSends reports whether this side sends on a stream in direction rev.
func (t *textReport) localSends(rev bool) bool { return t.client != rev }

// header is printed above the first interval, as 3.21 chooses it.
func (t *textReport) header(iv throughput.Interval) string {
	b := ""
	if t.bidir {
		b = "[Role]"
	}
	cols := "[ ID]" + b + " Interval           Transfer     Bitrate"
	if t.udp {
		switch {
		case t.bidir:
			return cols + "         Jitter    Lost/Total Datagrams\n"
		case t.localSends(t.reverse):
			return cols + "         Total Datagrams\n"
		}
		return cols + "         Jitter    Lost/Total Datagrams\n"
	}
	for _, s := range iv.Streams {
		if s.Sender && s.TCP != nil {
			return cols + "         Retr  Cwnd\n"
		}
	}
	return cols + "\n"
}

func (t *textReport) times(iv throughput.Interval) (float64, float64) {
	st, et := iv.Start.Seconds(), iv.End.Seconds()
	if iv.Omitted || t.omit == 0 {
		return st, et
	}
	return max(st-t.omit, 0), max(et-t.omit, 0)
}

// keepInterval is 3.21's rule for the last, short interval of a test: one
// shorter than a tenth of the reporting interval in which no stream moved
// data is not reported.
func keepInterval(iv throughput.Interval, every time.Duration) bool {
	if every <= 0 {
		every = time.Second
	}
	if iv.End-iv.Start >= every/10 {
		return true
	}
	for _, s := range iv.Streams {
		if s.Bytes > 0 {
			return true
		}
	}
	return false
}

// interval prints one interval report: a line per stream and, with
// several streams per direction, a [SUM] line per direction.
func (t *textReport) interval(iv throughput.Interval) {
	if !keepInterval(iv, t.every) {
		return
	}
	if t.intervals == 0 {
		fmt.Fprint(t.w, t.header(iv))
	} else if t.streams > 1 {
		fmt.Fprint(t.w, separator)
	}
	t.intervals++
	st, et := t.times(iv)
	omitted := ""
	if iv.Omitted {
		omitted = "(omitted)"
	}
	for _, s := range iv.Streams {
		tag := fmt.Sprintf("[%3d]%s", socketID(s.ID), t.roleTag(s.Sender))
		var cwnd int64
		if s.TCP != nil {
			cwnd = s.TCP.SndCwndBytes
		}
		t.line(tag, st, et, &s.Counts, s.Sender, s.TCP != nil, cwnd, omitted)
	}
	if t.streams < 2 {
		return
	}
	for _, d := range []struct {
		sum *throughput.Counts
		rev bool
	}{{iv.Upload, false}, {iv.Download, true}} {
		if d.sum == nil {
			continue
		}
		sender := t.localSends(d.rev)
		info := false
		for _, s := range iv.Streams {
			info = info || (s.Reverse == d.rev && s.TCP != nil)
		}
		tag := "[SUM]" + t.roleTag(sender)
		t.line(tag, st, et, d.sum, sender, info, -1, omitted)
	}
}

// line prints one interval line; cwnd < 0 marks a [SUM] line, which has
// a retransmit column but no cwnd.
func (t *textReport) line(tag string, st, et float64, c *throughput.Counts, sender, info bool, cwnd int64, end string) {
	head := fmt.Sprintf("%s %6.2f-%-6.2f sec  %ss  %ss/sec", tag, st, et, unitText(float64(c.Bytes), 'A'), unitText(c.BitsPerSecond/8, t.format))
	switch {
	case t.udp && sender:
		fmt.Fprintf(t.w, "%s %s %d  %s\n", head, t.zbuf(), c.Packets, end)
	case t.udp:
		fmt.Fprintf(t.w, "%s  %s ms  %d/%d (%.2g%%)  %s\n", head, jitterText(ms(c.Jitter)), c.LostPackets, c.Packets, percent(c.LostPackets, c.Packets), end)
	case sender && info && cwnd < 0:
		fmt.Fprintf(t.w, "%s  %3d             %s\n", head, c.Retransmits, end)
	case sender && info:
		fmt.Fprintf(t.w, "%s  %3d   %ss       %s\n", head, c.Retransmits, unitText(float64(cwnd), 'A'), end)
	default:
		fmt.Fprintf(t.w, "%s                  %s\n", head, end)
	}
}

// jitterText prints a jitter in milliseconds as iperf3 does ("%5.3f"),
// except that a measured value below 0.001 ms keeps two significant digits
// instead of reading 0.000: kernel arrival times resolve sub-microsecond
// jitter, and a nonzero measurement is never shown as none.
func jitterText(v float64) string {
	if v <= 0 || v >= 0.001 {
		return fmt.Sprintf("%5.3f", v)
	}
	return fmt.Sprintf("%.*f", int(math.Ceil(-math.Log10(v)))+1, v)
}

// ms is a duration in milliseconds, as iperf3 prints jitter.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// zbuf is the blank column 3.21 puts before a UDP sender's datagram count
// in bidirectional tests (and leaves empty otherwise).
func (t *textReport) zbuf() string {
	if t.bidir {
		return "          "
	}
	return ""
}

func percent(lost, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * float64(lost) / float64(total)
}

// summary prints the separator, the summary header and each stream's
// sender and receiver lines, then the [SUM] lines of each direction.
func (t *textReport) summary(r *throughput.Result) {
	fmt.Fprint(t.w, separator)
	if t.verbose {
		fmt.Fprint(t.w, "Test Complete. Summary Results:\n")
	}
	b := ""
	if t.bidir {
		b = "[Role]"
	}
	if t.udp {
		fmt.Fprintf(t.w, "[ ID]%s Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n", b)
	} else {
		fmt.Fprintf(t.w, "[ ID]%s Interval           Transfer     Bitrate         Retr\n", b)
	}
	for _, rev := range []bool{false, true} {
		n := 0
		for _, s := range r.Streams {
			if s.Reverse == rev {
				t.streamSummary(s)
				n++
			}
		}
		sum := r.Upload
		if rev {
			sum = r.Download
		}
		if sum != nil && n > 0 && t.streams > 1 {
			t.sumSummary(sum, t.roleTag(t.localSends(rev)))
		}
	}
	if t.verbose {
		c := r.CPU
		local, remote := "sender", "receiver"
		if t.reverse != !t.client {
			local, remote = remote, local
		}
		fmt.Fprintf(t.w, "CPU Utilization: local/%s %.1f%% (%.1f%%u/%.1f%%s), remote/%s %.1f%% (%.1f%%u/%.1f%%s)\n",
			local, c.HostTotal, c.HostUser, c.HostSystem, remote, c.RemoteTotal, c.RemoteUser, c.RemoteSystem)
	}
}

func (t *textReport) streamSummary(s throughput.StreamResult) {
	tag := fmt.Sprintf("[%3d]%s", socketID(s.ID), t.roleTag(t.localSends(s.Reverse)))
	t.summaryPair(tag, &s.Totals)
}

func (t *textReport) sumSummary(s *throughput.Summary, role string) {
	t.summaryPair("[SUM]"+role, &s.Totals)
}

func (t *textReport) summaryPair(tag string, tot *throughput.Totals) {
	secs := tot.Duration.Seconds()
	head := func(c *throughput.Counts) string {
		return fmt.Sprintf("%s %6.2f-%-6.2f sec  %ss  %ss/sec", tag, 0.0, secs, unitText(float64(c.Bytes), 'A'), unitText(c.BitsPerSecond/8, t.format))
	}
	snd, rcv := &tot.Sent, &tot.Received
	if t.udp {
		sentPkts := snd.Packets
		if sentPkts == 0 {
			sentPkts = rcv.Packets
		}
		fmt.Fprintf(t.w, "%s  %5.3f ms  %d/%d (%.2g%%)  sender\n", head(snd), 0.0, 0, sentPkts, 0.0)
		fmt.Fprintf(t.w, "%s  %s ms  %d/%d (%.2g%%)  receiver\n", head(rcv), jitterText(ms(rcv.Jitter)), rcv.LostPackets, rcv.Packets, percent(rcv.LostPackets, rcv.Packets))
		return
	}
	switch {
	case snd.Retransmits >= 0 && strings.HasPrefix(tag, "[SUM]"):
		fmt.Fprintf(t.w, "%s  %3d             sender\n", head(snd), snd.Retransmits)
	case snd.Retransmits >= 0:
		fmt.Fprintf(t.w, "%s  %3d            sender\n", head(snd), snd.Retransmits)
	default:
		fmt.Fprintf(t.w, "%s                  sender\n", head(snd))
	}
	fmt.Fprintf(t.w, "%s                  receiver\n", head(rcv))
}

// done ends a client's report as 3.21 does.
func (t *textReport) done() { fmt.Fprint(t.w, "\niperf Done.\n") }
