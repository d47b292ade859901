package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	numberRE = regexp.MustCompile(`\d+(\.\d+)?`)
	bytesRE  = regexp.MustCompile(`\b[KMGT]?Bytes\b`)
	bitsRE   = regexp.MustCompile(`\b[KMGT]?bits/sec\b`)
)

// kind is a line with its numbers and unit prefixes taken out and its
// white space runs kept as field breaks: two lines of the same kind have
// the same columns for awk and cut.
func kind(l string) string {
	l = numberRE.ReplaceAllString(l, "N")
	l = bytesRE.ReplaceAllString(l, "Bytes")
	l = bitsRE.ReplaceAllString(l, "bits/sec")
	return strings.Join(strings.Fields(l), " ")
}

// textShape splits a client's text output into its connected lines, the
// distinct kinds of its interval section in order of first appearance,
// and the kinds of its summary section (from the last separator on).
func textShape(out string) (connected, intervals, summary []string) {
	lines := strings.Split(out, "\n")
	last := -1
	for i, l := range lines {
		if l == "- - - - - - - - - - - - - - - - - - - - - - - - -" && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "[ ID]") {
			last = i
		}
	}
	seen := map[string]bool{}
	for i, l := range lines {
		k := kind(l)
		switch {
		case strings.HasPrefix(l, "note: "):
			// netperfkit's own lines (TextReport.Extras), such as a
			// sender that could not keep a loaded machine's pace.
		case strings.Contains(l, " connected to "):
			connected = append(connected, k)
		case last >= 0 && i >= last:
			summary = append(summary, k)
		case !seen[k]:
			seen[k] = true
			intervals = append(intervals, k)
		}
	}
	return connected, intervals, summary
}

// TestTextMatches321 runs the same test shapes with iperf3 3.21's client
// and with this tool against a 3.21 server and compares the kinds of lines
// and their columns (not the numbers).
func TestTextMatches321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	for _, shape := range []string{"", "-R", "-u -b 10M", "-u -R", "-P 2", "--bidir", "-O 1 -f m", "-f K", "-P 2 -u -b 2M"} {
		t.Run(shape, func(t *testing.T) {
			args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2"}, strings.Fields(shape)...)
			want := run321(t, bin, args...)
			got, errOut, code := runTool321(args...)
			require.Equal(t, 0, code, errOut)
			sameShape(t, want, got)
		})
	}
}

// run321 runs the 3.21 client, retrying while the server is still busy
// with the previous test or re-opening its listener (it takes a moment to
// reset after a client leaves).
func run321(t *testing.T, bin string, args ...string) string {
	t.Helper()
	for i := 0; ; i++ {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err == nil {
			return out.String()
		}
		retry := false
		// With -J or --json-stream 3.21 writes the error to stdout.
		for _, s := range []string{"busy", "Connection refused", "unable to receive control message"} {
			retry = retry || strings.Contains(errOut.String()+out.String(), s)
		}
		require.True(t, retry && i < 50, "%v: %s", err, errOut.String())
		time.Sleep(100 * time.Millisecond)
	}
}

// runTool321 runs this tool against the 3.21 server, retrying while that
// server is still resetting after the previous test: it then refuses with
// ACCESS_DENIED and a close, which can reach this client as a reset.
func runTool321(args ...string) (string, string, int) {
	for i := 0; ; i++ {
		out, errOut, code := runTool(context.Background(), args...)
		// 3.21 also closes its listening socket while it resets, so a
		// connection can be refused for a moment.
		busy := false
		// The tool words socket errors as 3.21 does ("Connection reset by
		// peer"), so match without case.
		text := strings.ToLower(out + errOut)
		for _, s := range []string{"busy", "access denied", "connection reset", "connection refused"} {
			busy = busy || strings.Contains(text, s)
		}
		if code == 0 || !busy || i == 50 {
			return out, errOut, code
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDataPathOptions321 carries -Z, --skip-rx-copy, --gsro and --fq-rate
// to a 3.21 server (they were parsed and refused with a warning before the
// library had them): each test runs, moves data, and warns about nothing.
func TestDataPathOptions321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	for _, shape := range []string{"-Z", "--skip-rx-copy", "-R --skip-rx-copy", "-u -b 100M --gsro", "--fq-rate 500M"} {
		t.Run(shape, func(t *testing.T) {
			args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J"}, strings.Fields(shape)...)
			out, errOut, code := runTool321(args...)
			require.Equal(t, 0, code, errOut)
			assert.NotContains(t, errOut, "not supported", "the option is carried out, not skipped")
			doc := decodeEnd(t, out)
			assert.Positive(t, doc.End.SumReceived.Bytes+doc.End.Sum.Bytes, out)
		})
	}
}

// endSums is the part of a -J document the option tests check.
type endSums struct {
	End struct {
		SumReceived struct {
			Bytes float64 `json:"bytes"`
		} `json:"sum_received"`
		Sum struct {
			Bytes float64 `json:"bytes"`
		} `json:"sum"`
	} `json:"end"`
}

func decodeEnd(t *testing.T, out string) *endSums {
	t.Helper()
	var doc endSums
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return &doc
}

// sameShape checks that our text has 3.21's shape: the same connected
// lines, printed as the streams connect, then the same interval and
// summary sections (textShape).
func sameShape(t *testing.T, want, got string) {
	t.Helper()
	wc, wi, ws := textShape(want)
	gc, gi, gs := textShape(got)
	assert.Equal(t, wc, gc, "connected lines\n3.21:\n%s\nours:\n%s", want, got)
	assert.Equal(t, wi, gi, "interval section\n3.21:\n%s\nours:\n%s", want, got)
	assert.Equal(t, ws, gs, "summary section\n3.21:\n%s\nours:\n%s", want, got)
}
