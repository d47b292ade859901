package main

import (
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// rfc1123GMT is 3.21's "Time:" format (strftime "%a, %d %b %Y %H:%M:%S %Z"
// of gmtime).
const rfc1123GMT = "Mon, 02 Jan 2006 15:04:05 GMT"

// printSystem writes 3.21's first -V lines: the version and the system.
func printSystem(w io.Writer) {
	fmt.Fprintf(w, "%s\n", versionLine())
	fmt.Fprintf(w, "%s\n", systemInfo())
}

// connecting writes what 3.21's client writes once the server has taken
// its control connection: with -V the control connection's MSS, the UDP
// block size it chose, the time; then "Connecting to host" and, with -V,
// the cookie, the TCP MSS and the target bitrate.
func connecting(w io.Writer, o *options, txt *iperf3fmt.TextReport, host string, r *throughput.Result) {
	c := &r.Config
	if o.verbose {
		fmt.Fprintf(w, "Control connection MSS %d\n", r.ControlMSS)
		if c.UDP && !o.blockLenSet {
			fmt.Fprintf(w, "Setting UDP block size to %d\n", c.BlockLen)
		}
		fmt.Fprintf(w, "Time: %s\n", time.Now().UTC().Format(rfc1123GMT))
	}
	txt.Connecting(host, o.port)
	if !o.verbose {
		return
	}
	fmt.Fprintf(w, "      Cookie: %s\n", r.Cookie)
	if !c.UDP {
		if c.MSS > 0 {
			fmt.Fprintf(w, "      TCP MSS: %d\n", c.MSS)
		} else {
			fmt.Fprintf(w, "      TCP MSS: %d (default)\n", r.ControlMSS)
		}
	}
	if c.Bitrate > 0 {
		fmt.Fprintf(w, "      Target Bitrate: %d\n", uint64(c.Bitrate))
	}
}

// startingTest writes 3.21's -V "Starting Test" line, after the streams
// connect.
func startingTest(w io.Writer, o *options, r *throughput.Result) {
	if !o.verbose {
		return
	}
	c := &r.Config
	proto := "TCP"
	if c.UDP {
		proto = "UDP"
	}
	head := fmt.Sprintf("Starting Test: protocol: %s, %d streams, %d byte blocks, omitting %d seconds, ",
		proto, max(c.Streams, 1), c.BlockLen, int(c.Omit/time.Second))
	switch {
	case c.Bytes > 0:
		fmt.Fprintf(w, "%s%d bytes to send, tos %d\n", head, c.Bytes, c.TOS)
	case c.Blocks > 0:
		fmt.Fprintf(w, "%s%d blocks to send, tos %d\n", head, c.Blocks, c.TOS)
	default:
		fmt.Fprintf(w, "%s%d second test, tos %d\n", head, int(c.Duration/time.Second), c.TOS)
	}
}

// congestionLines writes 3.21's -V snd_tcp_congestion/rcv_tcp_congestion
// lines after a TCP test's summary: the sending side's algorithm first.
func congestionLines(w io.Writer, r *throughput.Result) {
	if r.Config.UDP {
		return
	}
	snd, rcv := r.Congestion, r.RemoteCongestion
	if r.Config.Reverse {
		snd, rcv = rcv, snd
	}
	if snd != "" {
		fmt.Fprintf(w, "snd_tcp_congestion %s\n", snd)
	}
	if rcv != "" {
		fmt.Fprintf(w, "rcv_tcp_congestion %s\n", rcv)
	}
}
