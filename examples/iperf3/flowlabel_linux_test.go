package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// exec321 runs the 3.21 client with args and returns its output and exit
// status, retrying as run321 does while a 3.21 server is still busy.
func exec321(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			require.NoError(t, err)
		}
		busy := false
		for _, s := range []string{"busy", "Connection refused", "unable to receive control message"} {
			busy = busy || strings.Contains(errOut.String(), s)
		}
		if err == nil || !busy || i == 50 {
			return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFlowLabel321: -L against a 3.21 server over IPv6 runs, TCP and UDP,
// forward and -R; over IPv4 a TCP test fails with 3.21's words and a UDP
// test runs, as 3.21's client does; a 3.21 client's -L reaches our server.
// (The throughput package's tests read the labels off the wire.)
func TestFlowLabel321(t *testing.T) {
	bin := peertest.NewIPerf3(t, "IPv6 flow label")
	port := strconv.Itoa(server321(t, bin))
	for _, extra := range [][]string{{}, {"-R"}, {"-u", "-b", "10M"}, {"-u", "-b", "10M", "-R"}} {
		args := append([]string{"-c", "::1", "-p", port, "-t", "0.5", "-L", "0x12345"}, extra...)
		_, errOut, code := runTool321(args...)
		assert.Equal(t, 0, code, "%v: %s", args, errOut)
	}
	args := []string{"-c", "127.0.0.1", "-p", port, "-t", "1", "-L", "5"}
	wantOut, wantErr, wantCode := exec321(t, bin, args...)
	require.Equal(t, 1, wantCode)
	out, errOut, code := runTool321(args...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - unable to set IPv6 flow label\n", errOut)
	assert.Equal(t, wantErr, errOut)
	assert.Equal(t, wantOut, out)
	_, errOut, code = runTool321("-c", "127.0.0.1", "-p", port, "-t", "0.5", "-L", "5", "-u")
	assert.Equal(t, 0, code, "3.21 runs a UDP test over IPv4 without the label: %s", errOut)

	sport, sout, _ := ourServer(t, "-d")
	for _, extra := range [][]string{{}, {"-R"}, {"-u", "-b", "10M", "-R"}} {
		args := append([]string{"-c", "::1", "-p", strconv.Itoa(sport), "-t", "1", "-L", "0x12345"}, extra...)
		_, errOut, code := exec321(t, bin, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
	}
	assert.Equal(t, 3, strings.Count(sout.String(), `"flowlabel": 74565`), "the server's parameters, as -d prints them")
}
