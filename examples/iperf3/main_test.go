package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// server321 starts `iperf3 -s` (3.21, or bin) with extra on a free port
// for the test.
func server321(t *testing.T, bin string, extra ...string) int {
	t.Helper()
	port := peertest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out peertest.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"-s", "--forceflush", "-p", strconv.Itoa(port)}, extra...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Server listening") {
		require.True(t, time.Now().Before(deadline), "iperf3 -s did not start: %s", out.String())
		time.Sleep(20 * time.Millisecond)
	}
	return port
}

// runTool runs this program with args and returns stdout, stderr and the
// exit status.
func runTool(ctx context.Context, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"iperf3"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestInProcessText(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "1", "-i", "0.5", "-P", "2", "--rtt", "local")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Connecting to host 127.0.0.1")
	assert.Contains(t, out, "[SUM]")
	assert.Contains(t, out, "sender")
	assert.Contains(t, out, "receiver")
	assert.Contains(t, out, "\niperf Done.\n")
	assert.Contains(t, out, "RTT under load (udp,")
	assert.GreaterOrEqual(t, strings.Count(out, "sec "), 6)
	assert.Less(t, strings.LastIndex(out, " connected to "), strings.Index(out, "[ ID] Interval"), "connected lines come first, as in 3.21")
}

func TestInProcessJSON(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "1", "-u", "-b", "10M", "-J")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		End struct {
			Sum struct {
				JitterMs    *float64 `json:"jitter_ms"`
				LostPercent *float64 `json:"lost_percent"`
				Packets     int64    `json:"packets"`
			} `json:"sum"`
			CPU map[string]float64 `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.NotNil(t, doc.End.Sum.JitterMs)
	assert.NotNil(t, doc.End.Sum.LostPercent)
	// 10 Mbit/s for a second in datagrams of the control connection's MSS,
	// as 3.21 picks them (tens of KiB on loopback): a few dozen, fewer on a
	// machine too loaded to keep the pace, which is not this test's to judge.
	assert.Positive(t, doc.End.Sum.Packets)
	assert.Contains(t, doc.End.CPU, "remote_total")
}

func TestServerMode(t *testing.T) {
	port := peertest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var sout, serr peertest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"iperf3", "-s", "-p", strconv.Itoa(port)}, &sout, &serr) }()
	var out, errOut string
	code := -1
	for i := 0; i < 50 && code != 0; i++ {
		out, errOut, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--bidir")
		if code != 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "[TX-C]")
	assert.Contains(t, out, "[RX-C]")
	cancel()
	require.Equal(t, 0, <-done)
	assert.Contains(t, sout.String(), "Server listening on "+strconv.Itoa(port)+" (test #1)")
	assert.Contains(t, sout.String(), "Accepted connection from 127.0.0.1")
	assert.Contains(t, sout.String(), "[TX-S]")
	assert.Contains(t, sout.String(), "(test #2)")
}

func TestOneOff(t *testing.T) {
	port := peertest.FreePort(t)
	var sout, serr peertest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"iperf3", "-s", "-1", "-i", "0.25", "-p", strconv.Itoa(port)}, &sout, &serr)
	}()
	code := -1
	for i := 0; i < 50 && code != 0; i++ {
		if _, _, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1"); code != 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.Equal(t, 0, code)
	select {
	case c := <-done:
		assert.Equal(t, 0, c)
	case <-time.After(10 * time.Second):
		t.Fatal("-1 server did not exit after its test")
	}
	// -i is the server's own reporting interval, as in 3.21.
	assert.Contains(t, sout.String(), "0.25-0.50", sout.String())
}

func TestAuthSetupErrors(t *testing.T) {
	dir := t.TempDir()
	// Missing key files are reported as 3.21 reports them.
	_, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "--username", "u", "--rsa-public-key-path", filepath.Join(dir, "none.pem"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "parameter error - you must specify a username, password, and path to a valid RSA public key")
	_, errOut, code = runTool(context.Background(), "-s", "--rsa-private-key-path", filepath.Join(dir, "none.pem"), "--authorized-users-path", filepath.Join(dir, "none.csv"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "parameter error - cannot access authorized users file")
}

func TestVersionAndHelp(t *testing.T) {
	out, _, code := runTool(context.Background(), "-v")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "iperf 3.21 "), out)
	out, _, code = runTool(context.Background(), "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "Usage: iperf3 [-s|-c host] [options]\n"))
	for _, opt := range []string{"--json-stream", "--rsa-public-key-path", "--time-skew-threshold", "--rtt"} {
		assert.Contains(t, out, opt)
	}
}

func TestTitleAndTimestamps(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.5", "-T", "run1", "--timestamps=%Y|")
	require.Equal(t, 0, code, errOut)
	year := strconv.Itoa(time.Now().Year())
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" || l == "iperf Done." {
			continue // 3.21 prefixes once per print call; "\niperf Done.\n" is one call
		}
		assert.True(t, strings.HasPrefix(l, year+"|run1:  "), "%q", l)
	}
}

// TestInterrupt: as 3.21, a client stopped by SIGINT prints the summary of
// what ran, no "iperf Done.", "iperf3: interrupt - the client has
// terminated by signal Interrupt(2)" on stderr, and exits 0.
func TestInterrupt(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(1500*time.Millisecond, func() { cancel(&signalError{sig: syscall.SIGINT}) })
	start := time.Now()
	out, errOut, code := runTool(ctx, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "30")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, 0, code)
	assert.Equal(t, "iperf3: interrupt - the client has terminated by signal Interrupt(2)\n", errOut)
	assert.Contains(t, out, "- - - - - - - - - - - - - - - - - - - - - - - - -\n[ ID] Interval           Transfer     Bitrate         Retr\n")
	assert.Regexp(t, `(?m)^\[  4\]   0\.00-1\.\d\d   sec .* sender$`, out)
	assert.Regexp(t, `(?m)^\[  4\]   0\.00-1\.\d\d   sec  0\.00 Bytes  0\.00 bits/sec +receiver$`, out)
	assert.NotContains(t, out, "iperf Done.")
}

func TestErrorModes(t *testing.T) {
	port := peertest.FreePort(t) // nothing listens there
	_, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused\n", errOut)
	out, _, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--json-stream")
	assert.Equal(t, 1, code)
	var ev struct {
		Event string `json:"event"`
		Data  string `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ev), out)
	assert.Equal(t, "error", ev.Event)
	_, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.Error(t, err, "the port really was closed")
}
