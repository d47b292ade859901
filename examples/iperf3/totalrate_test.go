package main

import (
	"context"
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

// limitShapes are a test that asks for more than the 50 Mbit/s limit of
// the servers below (refused) and one that asks for no rate (ended by the
// one-second window, long before its 20 s).
var limitShapes = map[string][]string{"refused": {"-t", "1", "-b", "30M", "-P", "2"}, "window": {"-t", "20"}}

// errorLines are where a client says why it failed.
var errorLines = regexp.MustCompile(`(?m)^iperf3: (error|SERVER ERROR) - .*$`)

// sansWriteRace drops a 3.21 client's last line when it says a stream
// write failed: its stream threads share the error code with the thread
// that read SERVER_ERROR, and one whose write to the stream the server
// closed failed in between has the last word (seen against 3.21's server;
// this tool's keeps the streams open until the client leaves).
func sansWriteRace(lines []string) []string {
	if n := len(lines); n > 1 && strings.HasPrefix(lines[n-1], "iperf3: error - unable to write to stream socket") {
		return lines[:n-1]
	}
	return lines
}

// stockClient runs a stock client against port and returns its exit status
// and error lines.
func stockClient(t *testing.T, bin string, port int, args []string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	out, _ := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "%s", out)
	return cmd.ProcessState.ExitCode(), errorLines.FindAllString(string(out), -1)
}

// TestServerBitrateLimitStockClients: stock clients against this tool's
// server with --server-bitrate-limit get what a 3.21 server with the same
// limit gives them, and both servers say why. (3.12's client, when a
// running test is ended, may report a failed stream write instead, against
// 3.21 too: there only the exit status is compared.)
func TestServerBitrateLimitStockClients(t *testing.T) {
	bins := stockBinaries(t)
	port, _, serr := ourServer(t, "--server-bitrate-limit", "50M/1")
	for name, bin := range bins {
		for shape, args := range limitShapes {
			t.Run(name+" client "+shape, func(t *testing.T) {
				wantCode, want := stockClient(t, bin, server321(t, bins["3.21"], "--server-bitrate-limit", "50M/1"), args)
				start := time.Now()
				code, got := stockClient(t, bin, port, args)
				assert.Less(t, time.Since(start), 15*time.Second, "ended by the limit, not by the test's time")
				require.Equal(t, 1, wantCode, "%v", want)
				assert.Equal(t, wantCode, code, "%v", got)
				if name == "3.21" || shape == "refused" {
					assert.Equal(t, sansWriteRace(want), sansWriteRace(got))
					require.NotEmpty(t, got)
					assert.Equal(t, "iperf3: error - total required bandwidth is larger than server limit", got[len(got)-1])
				}
			})
		}
	}
	// The server says so once each test is over, which may be after its
	// client has exited.
	assert.Eventually(t, func() bool {
		return strings.Count(serr.String(), "iperf3: error - total required bandwidth is larger than server limit\n") == 2*len(bins)
	}, 10*time.Second, 20*time.Millisecond, serr.String())
	assert.NotContains(t, serr.String(), "warning")
}

// TestServerBitrateLimitOurClient: this tool's client against a 3.21
// server with --server-bitrate-limit ends as 3.21's client does, with exit
// status 1 and 3.21's words for the limit.
func TestServerBitrateLimitOurClient(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	for shape, args := range limitShapes {
		t.Run(shape, func(t *testing.T) {
			// A fresh server each: 3.21's reopens its listener between tests.
			_, want := stockClient(t, bin, server321(t, bin, "--server-bitrate-limit", "50M/1"), args)
			port := server321(t, bin, "--server-bitrate-limit", "50M/1")
			all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
			_, errOut, code := runTool(context.Background(), all...)
			assert.Equal(t, 1, code)
			assert.Equal(t, "iperf3: SERVER ERROR - total required bandwidth is larger than server limit\n"+
				"iperf3: error - total required bandwidth is larger than server limit\n", errOut)
			assert.Equal(t, sansWriteRace(want), errorLines.FindAllString(errOut, -1), "3.21's client's lines")
		})
	}
}
