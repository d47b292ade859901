package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestIntervalZero321: -i 0 prints the header and one interval line for
// the whole test at its end, as 3.21 does, and -J holds that one interval
// with "interval": 0.
func TestIntervalZero321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-i", "0"}
	want := run321(t, bin, args...)
	got, errOut, code := runTool321(args...)
	require.Equal(t, 0, code, errOut)
	sameShape(t, want, got)
	assert.Equal(t, 3, strings.Count(got, " sec "), "one interval line, then sender and receiver: %s", got)

	out, errOut, code := runTool321(append(args, "-J")...)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Start struct {
			TestStart struct {
				Interval *float64 `json:"interval"`
			} `json:"test_start"`
		} `json:"start"`
		Intervals []json.RawMessage `json:"intervals"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Len(t, doc.Intervals, 1)
	require.NotNil(t, doc.Start.TestStart.Interval)
	assert.Zero(t, *doc.Start.TestStart.Interval)
}

// TestCongestionUnknown321: an algorithm the kernel does not have is
// reported with 3.21's words, after "Connecting to host" as in 3.21.
func TestCongestionUnknown321(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_CONGESTION is linux's")
	}
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-C", "no-such-algorithm"}
	var wantOut, wantErr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &wantOut, &wantErr
	require.Error(t, cmd.Run())
	out, errOut, code := runTool321(args...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - "+msgCongestion+"\n", errOut)
	assert.Equal(t, wantErr.String(), errOut)
	assert.Equal(t, wantOut.String(), out)
}

// TestServerTerminated321: a 3.21 server killed mid-test; the client
// prints the summary so far and "the server has terminated", as 3.21's.
func TestServerTerminated321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	for _, mode := range []string{"text", "-J"} {
		t.Run(mode, func(t *testing.T) {
			port := peertest.FreePort(t)
			var sout peertest.Buffer
			srv := exec.Command(bin, "-s", "--forceflush", "-p", strconv.Itoa(port))
			srv.Stdout, srv.Stderr = &sout, &sout
			require.NoError(t, srv.Start())
			t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(sout.String(), "Server listening"); {
				require.True(t, time.Now().Before(deadline), sout.String())
				time.Sleep(20 * time.Millisecond)
			}
			time.AfterFunc(1500*time.Millisecond, func() { _ = srv.Process.Signal(syscall.SIGTERM) })
			args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "5", "-b", "10M"}
			if mode == "-J" {
				args = append(args, "-J")
			}
			out, errOut, code := runTool(context.Background(), args...)
			assert.Equal(t, 1, code)
			if mode == "-J" {
				var doc struct {
					Error string                     `json:"error"`
					End   map[string]json.RawMessage `json:"end"`
				}
				require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
				assert.Equal(t, "the server has terminated", doc.Error)
				assert.Contains(t, doc.End, "sum_sent")
				return
			}
			assert.Equal(t, "iperf3: error - the server has terminated\n", errOut)
			assert.Contains(t, out, "- - - - - - - - - - - - - - - - - - - - - - - - -\n[ ID] Interval           Transfer     Bitrate         Retr\n")
			assert.Regexp(t, `(?m)^\[  4\]   0\.00-1\.\d\d   sec .* sender$`, out)
			assert.Regexp(t, `(?m)^\[  4\]   0\.00-1\.\d\d   sec .* receiver$`, out)
		})
	}
}

// TestVerbose321: -V prints 3.21's lines, in 3.21's order, around the
// connection and after the summary.
func TestVerbose321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-V"}
	want := run321(t, bin, args...)
	got, errOut, code := runTool321(args...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, verboseLabels(want), verboseLabels(got), "3.21:\n%s\nours:\n%s", want, got)
	assert.Contains(t, got, "Starting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 0 seconds, 1 second test, tos 0\n")
	assert.Regexp(t, `(?m)^Linux \S+ \S+ `, got, "uname's line")
	if runtime.GOOS == "linux" {
		assert.Regexp(t, `(?m)^snd_tcp_congestion \w+\nrcv_tcp_congestion \w+$`, got)
	}
}

// verboseLabels names the -V lines of a client's output (the first word
// or two), without the interval and summary lines, which other tests
// compare.
func verboseLabels(out string) []string {
	var labels []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 0 || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "- -") || strings.HasPrefix(l, "iperf "):
		case f[0] == "Linux" || f[0] == "Darwin":
			labels = append(labels, "uname")
		case len(f) > 1 && f[0] == "TCP":
			labels = append(labels, "TCP MSS")
		default:
			labels = append(labels, f[0])
		}
	}
	return labels
}

// TestConnectErrors: nothing before a failed connect (3.21 prints only the
// error), getaddrinfo's words for names and families, and -J's "start"
// with what is known before connecting.
func TestConnectErrors(t *testing.T) {
	port := strconv.Itoa(peertest.FreePort(t)) // nothing listens there
	out, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", port, "-t", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "Connection refused")

	out, errOut, code = runTool(context.Background(), "-c", "127.0.0.1", "-6", "-p", port, "-t", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "iperf3: error - "+msgConnect+": Address family for hostname not supported\n", errOut)

	out, errOut, code = runTool(context.Background(), "-c", "nonexistent.invalid", "-p", port, "-t", "1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Regexp(t, `^iperf3: error - `+msgConnect+`: (Name or service not known|Temporary failure in name resolution)\n$`, errOut)

	out, _, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", port, "-t", "1", "-J")
	assert.Equal(t, 1, code)
	var doc struct {
		Start struct {
			Connected  []any  `json:"connected"`
			Version    string `json:"version"`
			SystemInfo string `json:"system_info"`
		} `json:"start"`
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.NotNil(t, doc.Start.Connected)
	assert.Empty(t, doc.Start.Connected)
	assert.NotEmpty(t, doc.Start.Version)
	assert.NotEmpty(t, doc.Start.SystemInfo)
	assert.Contains(t, doc.Error, "Connection refused")
}

// TestServerPortInUse: -J and --json-stream report a listener that
// cannot start as 3.21 does, in JSON; text mode in 3.21's words.
func TestServerPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	const msg = "error - unable to start listener for connections: Address already in use"

	out, _, code := runTool(context.Background(), "-s", "-p", port, "-J")
	assert.Equal(t, 1, code)
	var doc struct {
		Start map[string]any `json:"start"`
		Error string         `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, msg, doc.Error)
	assert.Contains(t, doc.Start, "version")

	out, _, code = runTool(context.Background(), "-s", "-p", port, "--json-stream")
	assert.Equal(t, 1, code)
	assert.Equal(t, `{"event":"error","data":"`+msg+`"}`+"\n"+`{"event":"end","data":{}}`+"\n", out)

	_, errOut, code := runTool(context.Background(), "-s", "-p", port)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: "+msg+"\niperf3: exiting\n", errOut)
}

// TestMaxTestsOne: --max-tests 1 gives 3.21's one test at a time.
func TestMaxTestsOne(t *testing.T) {
	port := strconv.Itoa(peertest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	var sout, serr peertest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"iperf3", "-s", "-p", port, "--max-tests", "1"}, &sout, &serr) }()
	defer func() {
		cancel()
		<-done
	}()
	first := make(chan int, 1)
	go func() {
		code := -1
		for i := 0; i < 50 && code != 0; i++ {
			if _, _, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", port, "-t", "2"); code != 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		first <- code
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(sout.String(), "Accepted connection"); {
		require.True(t, time.Now().Before(deadline), sout.String())
		time.Sleep(20 * time.Millisecond)
	}
	_, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", port, "-t", "1")
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - the server is busy running a test. try again later\n", errOut)
	assert.Equal(t, 0, <-first)
}

// TestIdleTimeoutWithoutOneOffWarns: --idle-timeout without -1 does
// nothing here, and says so.
func TestIdleTimeoutWithoutOneOffWarns(t *testing.T) {
	port := strconv.Itoa(peertest.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, errOut, code := runTool(ctx, "-s", "-p", port, "--idle-timeout", "5")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "iperf3: warning - --idle-timeout without -1 is accepted, not carried out")
}

// TestPidfileClient: -I writes the pid and removes the file at exit; a
// file naming a live process stops the run, one naming a dead one is
// taken over.
func TestPidfileClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iperf3.pid")
	remove, err := createPidfile(path)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid()), string(b), "the pid, no newline, as 3.21")
	_, err = createPidfile(path)
	assert.EqualError(t, err, "Another instance of iperf3 appears to be running")
	remove()
	assert.NoFileExists(t, path)

	require.NoError(t, os.WriteFile(path, []byte("2147483646"), 0o600)) // no such process
	_, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "-I", path)
	require.Equal(t, 0, code, errOut)
	assert.NoFileExists(t, path, "removed at exit")

	require.NoError(t, os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600))
	_, errOut, code = runTool(context.Background(), "--in-process", "-t", "0.3", "-I", path)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: Another instance of iperf3 appears to be running\n", errOut)
}

// TestDebugOutput: -d prints the test's state changes and parameters.
func TestDebugOutput(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "-d")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "State change: client reached 1-TEST_START")
	assert.Contains(t, out, "send_parameters (as netperfkit's throughput.Config):\n{")
	assert.Contains(t, out, "\niperf Done.\n")
	out, errOut, code = runTool(context.Background(), "--in-process", "-t", "0.3", "--debug=3")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "State change:")
	assert.NotContains(t, out, "send_parameters", "level 3 has no parameters")
}

// TestJSONStreamFullOutput: --json-stream-full-output follows the stream
// with the whole -J document, as 3.21.
func TestJSONStreamFullOutput(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "--json-stream", "--json-stream-full-output")
	require.Equal(t, 0, code, errOut)
	i := strings.Index(out, "\n{\n")
	require.Positive(t, i, out)
	for _, l := range strings.Split(out[:i], "\n") {
		var ev struct {
			Event string `json:"event"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
	}
	assert.Contains(t, out[:i], `{"event":"end"`)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out[i+1:]), &doc), out[i+1:])
	assert.Contains(t, doc, "start")
	assert.Contains(t, doc, "intervals")
	assert.Contains(t, doc, "end")
}

// TestCompatOptionsRunWithoutWarning: the 3.21 options that once only
// warned (-F, -m, --bind-dev, --cntl-ka, -A n,m) are carried out: the test
// runs, and none says it is not.
func TestCompatOptionsRunWithoutWarning(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(file, make([]byte, 1<<20), 0o600))
	// -A's m must be n here: -A n pins the whole process, the in-process
	// server too, which refuses a CPU outside its mask.
	out, errOut, code := runTool(context.Background(), "--in-process", "-F", file, "-m",
		"--bind-dev", "lo", "--cntl-ka", "-A", "0,0")
	if runtime.GOOS != "linux" {
		// -A is an error elsewhere; the rest is checked on linux.
		assert.Equal(t, 1, code)
		return
	}
	defer restoreAffinity(t)()
	require.Equal(t, 0, code, errOut)
	// -F, -m, --bind-dev, --cntl-ka and -A n,m are the library's
	// (SendFrom, Config.MPTCP, BindDevice, ControlKeepAlive,
	// ServerAffinity): carried out, no warning. (-L over IPv4 fails as in
	// 3.21; TestFlowLabel321 runs it on ::1.)
	for _, opt := range []string{"-F", "-m", "--bind-dev", "--cntl-ka", "-A"} {
		assert.NotContains(t, errOut, "iperf3: warning - "+opt)
	}
	assert.Regexp(t, `(?m)^\[  4\] .* 1\.00 MBytes .* sender$`, out, "-F's size is the test's length")
}

// TestTitlePrefixesDone: -T prefixes every line 3.21 writes, "iperf Done."
// included (3.21 writes it apart from the blank line before it).
func TestTitlePrefixesDone(t *testing.T) {
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "-T", "run7")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasSuffix(out, "run7:  \nrun7:  iperf Done.\n"), out)
}
