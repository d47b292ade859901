package throughput

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
)

// An interval line of iperf3's text output, as a stock server sends it in
// server_output_text: "[  5]   0.00-1.00   sec  1.78 GBytes  15.3 Gbits/sec    3   1.50 MBytes"
// (bidirectional tests tag the stream "[  8][TX-S]"). Summary lines end in
// "sender" or "receiver" and do not match.
var iperfTextLine = regexp.MustCompile(`^\[\s*(\d+|SUM)\](?:\[(TX|RX)-[SC]\])?\s+([\d.]+)-([\d.]+)\s+sec\s+([\d.]+) ([KMGT]?)Bytes\s+([\d.]+) ([KMGT]?)bits/sec(?:\s+(\d+)\s+([\d.]+) ([KMGT]?)Bytes)?\s*(\(omitted\))?\s*$`)

// textInterval is one stream's line of a stock server's text output.
type textInterval struct {
	start, end   float64
	tx           bool // the server sent on this stream (it has Retr and Cwnd)
	retransmits  int64
	sndCwndBytes int64
}

func unitMult(u string, base float64) float64 {
	switch u {
	case "K":
		return base
	case "M":
		return base * base
	case "G":
		return base * base * base
	case "T":
		return base * base * base * base
	}
	return 1
}

// parseServerText extracts the per-stream interval lines of iperf3's text
// output in order; [SUM] lines are skipped.
func parseServerText(text string) []textInterval {
	var out []textInterval
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		m := iperfTextLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "SUM" {
			continue
		}
		ti := textInterval{}
		ti.start, _ = strconv.ParseFloat(m[3], 64)
		ti.end, _ = strconv.ParseFloat(m[4], 64)
		if m[9] != "" {
			ti.tx = true
			ti.retransmits, _ = strconv.ParseInt(m[9], 10, 64)
			cw, _ := strconv.ParseFloat(m[10], 64)
			ti.sndCwndBytes = int64(cw * unitMult(m[11], 1024))
		}
		out = append(out, ti)
	}
	return out
}

// mergeServerText fills the retransmits and congestion window of the
// streams a stock iperf3 server sent (reverse and bidirectional tests) from
// its text output. Server intervals are paired with the client's by order,
// and only where they roughly coincide: iperf3's server reports every
// second on its own timer, which drifts by tens of milliseconds under load,
// so a client reporting at another interval gets nothing merged. Streams
// are matched by their order; RTT is not in the text.
func mergeServerText(r *Result, text string) {
	if text == "" || r.Config.UDP {
		return
	}
	// Group the server's sending-stream lines by interval, in order.
	var groups [][]textInterval
	for _, l := range parseServerText(text) {
		if !l.tx {
			continue
		}
		n := len(groups)
		if n > 0 && groups[n-1][0].start == l.start && groups[n-1][0].end == l.end {
			groups[n-1] = append(groups[n-1], l)
			continue
		}
		groups = append(groups, []textInterval{l})
	}
	for i := range r.Intervals {
		if i >= len(groups) {
			break
		}
		iv := &r.Intervals[i]
		g := groups[i]
		ours, theirs := (iv.End - iv.Start).Seconds(), g[0].end-g[0].start
		if !within(g[0].start, iv.Start.Seconds(), 0.25*ours+0.02) || !within(theirs, ours, 0.25*ours+0.02) {
			break
		}
		k := 0
		for j := range iv.Streams {
			st := &iv.Streams[j]
			if !st.Reverse || st.TCP != nil {
				continue
			}
			if k >= len(g) {
				break
			}
			st.Retransmits, st.TCP = g[k].retransmits, &TCPInfo{SndCwndBytes: g[k].sndCwndBytes}
			k++
		}
		if k > 0 {
			sumDownloadRetransmits(iv)
		}
	}
}

func within(a, b, tol float64) bool {
	d := a - b
	return d <= tol && d >= -tol
}
