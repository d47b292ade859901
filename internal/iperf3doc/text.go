package iperf3doc

import (
	"fmt"
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"io"
	"math"
	"net"
	"strings"
	"time"
)

// Options choose how a TextReport reads.
type Options struct {
	// Format is iperf3's -f: 'k', 'm', 'g', 't' show bitrates in a fixed
	// unit of bits, 'K', 'M', 'G', 'T' in bytes; 0 or 'a' adapts the unit.
	Format byte
	// Server writes the server's view: roles, headers and [RX-S]/[TX-S]
	// tags as a server prints them.
	Server bool
	// Verbose adds 3.21's -V lines ("Test Complete", CPU utilization).
	Verbose bool
}

// TextReport writes iperf3 3.21's human-readable report (the report_*
// formats of its src/iperf_locale.c): connection lines, interval lines
// with [SUM] lines for several streams, and the sender/receiver summary.
// Feed it a test's events as they come, or a finished Result through
// Text. A TextReport is not safe for concurrent use; throughput delivers a
// test's events from one goroutine.
type TextReport struct {
	w       io.Writer
	format  byte
	udp     bool
	bidir   bool
	reverse bool
	client  bool
	streams int     // streams per direction
	omit    float64 // seconds; interval times restart after it
	verbose bool
	every   time.Duration

	intervals int // interval groups written so far
}

const separator = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

// NewTextReport returns a report of a test run with cfg (for a server, the
// Config of the test's Result) that writes to w.
func NewTextReport(w io.Writer, cfg *flowmodel.Config, o Options) *TextReport {
	f := o.Format
	if f == 0 {
		f = 'a'
	}
	return &TextReport{w: w, format: f, udp: cfg.UDP, bidir: cfg.Bidir, reverse: cfg.Reverse, client: !o.Server,
		streams: max(cfg.Streams, 1), omit: cfg.Omit.Seconds(), verbose: o.Verbose, every: cfg.Interval}
}

// Text renders a whole result as iperf3 3.21's text report, from the
// view of the result's Role: interval lines, the summary, and what
// netperfkit adds (Extras).
func Text(r *flowmodel.Result) string {
	var b strings.Builder
	t := NewTextReport(&b, &r.Config, Options{Server: r.Role == "server"})
	for _, iv := range r.Intervals {
		t.Interval(iv)
	}
	t.Summary(r)
	t.Extras(r)
	return b.String()
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
	lf := format | 0x20 // lower case
	conv := strings.IndexByte("bkmgt", lf)
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

// Connecting writes what 3.21's client writes before its streams connect.
func (t *TextReport) Connecting(host string, port int) {
	fmt.Fprintf(t.w, "Connecting to host %s, port %d\n", host, port)
	if t.reverse {
		fmt.Fprintf(t.w, "Reverse mode, remote host %s is sending\n", host)
	}
}

// Connected writes one "[  4] local A port P connected to B port Q" line.
func (t *TextReport) Connected(s flowmodel.StreamResult) {
	lh, lp := splitAddr(s.LocalAddr)
	rh, rp := splitAddr(s.RemoteAddr)
	fmt.Fprintf(t.w, "[%3d] local %s port %s connected to %s port %s\n", t.id(s.ID), lh, lp, rh, rp)
}

func splitAddr(a string) (host, port string) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, "0"
	}
	return h, p
}

// textID is the number iperf3's text shows in "[ ID]": its socket
// descriptor. Streams are numbered 1, 3, 4, ... as the protocol does; a
// fresh 3.21 client shows 4, 6, 7, ... for them (its -J, and 3.12's, 5, 7,
// 8: socketOf), which keeps every column the same width.
func textID(id int) int { return id + 3 }

// id is the number this side's text shows for stream id: a 3.21 server's
// descriptors start one higher than a client's (its listener holds one),
// so its first stream is [  5].
func (t *TextReport) id(id int) int {
	if t.client {
		return textID(id)
	}
	return textID(id) + 1
}

func (t *TextReport) roleTag(sender bool) string {
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
func (t *TextReport) localSends(rev bool) bool { return t.client != rev }

// header is written above the first interval, as 3.21 chooses it.
func (t *TextReport) header(iv flowmodel.Interval) string {
	b := ""
	if t.bidir {
		b = "[Role]"
	}
	cols := "[ ID]" + b + " Interval           Transfer     Bitrate"
	if t.udp {
		if !t.bidir && t.localSends(t.reverse) {
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

func (t *TextReport) times(iv flowmodel.Interval) (float64, float64) {
	st, et := iv.Start.Seconds(), iv.End.Seconds()
	if iv.Omitted || t.omit == 0 {
		return st, et
	}
	return max(st-t.omit, 0), max(et-t.omit, 0)
}

// Sliver reports whether iv is the short last interval of a test that
// iperf3 3.21 leaves out of its reports (text and --json-stream): shorter
// than a tenth of the reporting interval every (0: 1 s) and with no stream
// moving data.
func Sliver(iv flowmodel.Interval, every time.Duration) bool {
	if every <= 0 {
		every = time.Second
	}
	if iv.End-iv.Start >= every/10 {
		return false
	}
	for _, s := range iv.Streams {
		if s.Bytes > 0 {
			return false
		}
	}
	return true
}

// Interval writes one interval report: a line per stream and, with
// several streams per direction, a [SUM] line per direction.
func (t *TextReport) Interval(iv flowmodel.Interval) {
	if Sliver(iv, t.every) {
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
		tag := fmt.Sprintf("[%3d]%s", t.id(s.ID), t.roleTag(s.Sender))
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
		sum *flowmodel.Counts
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

// line writes one interval line; cwnd < 0 marks a [SUM] line, which has
// a retransmit column but no cwnd.
func (t *TextReport) line(tag string, st, et float64, c *flowmodel.Counts, sender, info bool, cwnd int64, end string) {
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

// jitterText writes a jitter in milliseconds as iperf3 does ("%5.3f"),
// except that a measured value below 0.001 ms keeps two significant digits
// instead of reading 0.000: kernel arrival times resolve sub-microsecond
// jitter, and a nonzero measurement is never shown as none.
func jitterText(v float64) string {
	if v <= 0 || v >= 0.001 {
		return fmt.Sprintf("%5.3f", v)
	}
	return fmt.Sprintf("%.*f", int(math.Ceil(-math.Log10(v)))+1, v)
}

// FormatJitter writes a jitter in milliseconds as the text reports do:
// three decimals, and two significant digits below 0.001 ms, so that a
// measured jitter never reads as 0.000.
func FormatJitter(j time.Duration) string {
	return strings.TrimSpace(jitterText(float64(j) / float64(time.Millisecond)))
}

// zbuf is the blank column 3.21 puts before a UDP sender's datagram count
// in bidirectional tests (and leaves empty otherwise).
func (t *TextReport) zbuf() string {
	if t.bidir {
		return "          "
	}
	return ""
}

// Summary writes the separator, the summary header and each stream's
// sender and receiver lines, then the [SUM] lines of each direction.
func (t *TextReport) Summary(r *flowmodel.Result) {
	fmt.Fprint(t.w, separator)
	if t.verbose {
		fmt.Fprint(t.w, "Test Complete. Summary Results:\n")
	}
	b := ""
	if t.bidir {
		b = "[Role]"
	}
	switch {
	case t.udp:
		fmt.Fprintf(t.w, "[ ID]%s Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n", b)
	case t.client || t.localSends(t.reverse) || t.bidir:
		fmt.Fprintf(t.w, "[ ID]%s Interval           Transfer     Bitrate         Retr\n", b)
	default: // a server that only receives has no retransmits to show
		fmt.Fprintf(t.w, "[ ID]%s Interval           Transfer     Bitrate\n", b)
	}
	for _, rev := range []bool{false, true} {
		n := 0
		for _, s := range r.Streams {
			if s.Reverse == rev {
				t.summaryPair(fmt.Sprintf("[%3d]", t.id(s.ID)), t.roleTag(t.localSends(rev)), &s.Totals, t.localSends(rev))
				n++
			}
		}
		sum := r.Upload
		if rev {
			sum = r.Download
		}
		if sum != nil && n > 0 && t.streams > 1 {
			t.summaryPair("[SUM]", t.roleTag(t.localSends(rev)), &sum.Totals, t.localSends(rev))
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

// summaryPair writes a stream's (or a [SUM]'s) summary lines: a client
// writes the sender's and the receiver's, a server only its own side's, as
// 3.21's server does (with -V, a line saying the other side's statistics
// are not available). id is "[  4]" or "[SUM]", role the bidirectional
// role tag, which a "not available" line goes without.
func (t *TextReport) summaryPair(id, role string, tot *flowmodel.Totals, localSends bool) {
	sumLine := id == "[SUM]"
	tag := id + role
	secs := tot.Duration.Seconds()
	head := func(c *flowmodel.Counts) string {
		return fmt.Sprintf("%s %6.2f-%-6.2f sec  %ss  %ss/sec", tag, 0.0, secs, unitText(float64(c.Bytes), 'A'), unitText(c.BitsPerSecond/8, t.format))
	}
	snd, rcv := &tot.Sent, &tot.Received
	showSender, showReceiver := t.client || localSends, t.client || !localSends
	if !showSender && t.verbose {
		fmt.Fprintf(t.w, "%s (sender statistics not available)\n", id)
	}
	if showSender {
		switch {
		case t.udp:
			sentPkts := snd.Packets
			if sentPkts == 0 {
				sentPkts = rcv.Packets
			}
			fmt.Fprintf(t.w, "%s  %5.3f ms  %d/%d (%.2g%%)  sender\n", head(snd), 0.0, 0, sentPkts, 0.0)
		case snd.Retransmits >= 0 && sumLine:
			fmt.Fprintf(t.w, "%s  %3d             sender\n", head(snd), snd.Retransmits)
		case snd.Retransmits >= 0:
			fmt.Fprintf(t.w, "%s  %3d            sender\n", head(snd), snd.Retransmits)
		default:
			fmt.Fprintf(t.w, "%s                  sender\n", head(snd))
		}
	}
	if !showReceiver && t.verbose {
		fmt.Fprintf(t.w, "%s (receiver statistics not available)\n", id)
	}
	if showReceiver {
		if t.udp {
			fmt.Fprintf(t.w, "%s  %s ms  %d/%d (%.2g%%)  receiver\n", head(rcv), jitterText(ms(rcv.Jitter)), rcv.LostPackets, rcv.Packets, percent(rcv.LostPackets, rcv.Packets))
		} else {
			fmt.Fprintf(t.w, "%s                  receiver\n", head(rcv))
		}
	}
}

// Extras writes what netperfkit adds after iperf3's summary: a note when
// the generator rather than the network limited a direction, and the
// result's notes.
func (t *TextReport) Extras(r *flowmodel.Result) {
	for _, sm := range []*flowmodel.Summary{r.Upload, r.Download} {
		if sm == nil {
			continue
		}
		host := senderHost(r, sm == r.Download)
		if sm.SenderLimited {
			who := "the generator, not the network,"
			if sm.QueueLimited {
				who = host + "'s own queue, not the path,"
			}
			fmt.Fprintf(t.w, "note: the sender reached %ss/sec of a %ss/sec target: %s limited this test\n",
				unitText(sm.Sent.BitsPerSecond/8, t.format), unitText(rate(&r.Config)*float64(sm.Streams)/8, t.format), who)
		}
		t.localDrops(sm, host)
		t.ledger(sm.Ledger, sm == r.Download)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(t.w, "note: %s\n", n)
	}
}

// localDrops writes the line for datagrams the sender's own host refused,
// when there were any: they are neither sent nor lost on the path. host
// names the sender (senderHost): the peer's, for a direction it sent,
// whose refusals came in its results.
func (t *TextReport) localDrops(sm *flowmodel.Summary, host string) {
	switch c := sm.Sent; {
	case c.LocalDrops > 0:
		fmt.Fprintf(t.w, "note: dropped by %s: %d datagrams (%.2g%% of those offered) refused by its own queue; not sent, not counted as lost\n",
			host, c.LocalDrops, percent(c.LocalDrops, c.LocalDrops+c.Packets))
	case c.LocalRetries > 0:
		fmt.Fprintf(t.w, "note: %s's queue refused %d datagrams, which waited for it and were sent: the offered rate fell to what the host could send\n",
			host, c.LocalRetries)
	}
}

// senderHost names the host that sent the direction reverse (the
// download) for the text's notes: this host, or the peer's.
func senderHost(r *flowmodel.Result, reverse bool) string {
	switch {
	case localSends(r, reverse):
		return "this host"
	case r.Role == "server":
		return "the client's host"
	}
	return "the server's host"
}

// Done ends a client's report as 3.21 does, in two writes as 3.21 makes
// them, so that a writer which prefixes each (-T, --timestamps) prefixes
// "iperf Done." too.
func (t *TextReport) Done() {
	fmt.Fprint(t.w, "\n")
	fmt.Fprint(t.w, "iperf Done.\n")
}
