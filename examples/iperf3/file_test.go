package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// randomFile writes n reproducible random bytes to a new file and returns
// its path and contents.
func randomFile(t *testing.T, n int, seed uint64) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "src.bin")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p, b
}

// sameFile checks that the file at path holds want.
func sameFile(t *testing.T, want []byte, path string, what string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err, what)
	assert.True(t, bytes.Equal(want, got), "%s: %d bytes of %d, a first part: %v", what, len(got), len(want), bytes.HasPrefix(want, got))
}

// TestFileOurClientOurServer: -F sends the file's bytes (through the
// poller, on stream threads, with sendfile from the file for -Z) into a
// server writing its -F file, and -R -F downloads a server's -F file. No
// -t: the test is the file's length. Nothing warns.
func TestFileOurClientOurServer(t *testing.T) {
	src, data := randomFile(t, 3_000_017, 1)
	out := filepath.Join(t.TempDir(), "out.bin")
	port, _, serr := ourServer(t, "-F", out)
	p := strconv.Itoa(port)
	for _, extra := range [][]string{nil, {"-Z"}, {"--stream-threads=false"}, {"--stream-threads=false", "-Z"}} {
		args := append([]string{"-c", "127.0.0.1", "-p", p, "-F", src}, extra...)
		stdout, errOut, code := runTool321(args...) // one test at a time: retried while busy
		require.Equal(t, 0, code, errOut)
		assert.Empty(t, errOut)
		assert.Regexp(t, `(?m)^\[  4\] .* 2\.86 MBytes .* sender$`, stdout, "%v: the file's bytes", extra)
		sameFile(t, data, out, "upload "+strings.Join(extra, " "))
	}
	assert.Empty(t, serr.String())

	port, _, _ = ourServer(t, "-F", src)
	for _, extra := range [][]string{nil, {"-Z"}, {"--stream-threads=false"}} {
		dl := filepath.Join(t.TempDir(), "dl.bin")
		args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-R", "-F", dl, "-n", strconv.Itoa(len(data))}, extra...)
		_, errOut, code := runTool321(args...)
		require.Equal(t, 0, code, errOut)
		sameFile(t, data, dl, "download "+strings.Join(extra, " "))
	}
}

// TestFileRefused: -F's errors are 3.21's; --bidir is refused rather than
// truncating the file it would send, as 3.21 does; a server with -F
// refuses UDP tests.
func TestFileRefused(t *testing.T) {
	stdout, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "-F", filepath.Join(t.TempDir(), "none"))
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - unable to open -F file: No such file or directory\n", errOut)
	assert.Contains(t, stdout, "Connecting to host", "as 3.21, the streams open the file once connected")

	src, _ := randomFile(t, 1000, 2)
	_, errOut, code = runTool(context.Background(), "-c", "127.0.0.1", "-F", src, "--bidir")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "iperf3: parameter error - -F cannot be used with --bidir: the receiving stream would truncate the file before it is sent\n")
	st, err := os.Stat(src)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), st.Size())

	// A server whose -F cannot be opened, and a UDP test against a -F
	// server: our client words the server's error as 3.21's does.
	port, _, serr := ourServer(t, "-F", filepath.Join(t.TempDir(), "no", "such", "dir"))
	bin := peertest.NewIPerf3(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "1"}, "iperf3: SERVER ERROR - unable to open -F file: No such file or directory, errno: No such file or directory\n" +
			"iperf3: error - unable to open -F file: No such file or directory\n"},
		{[]string{"-t", "1", "-u"}, "iperf3: SERVER ERROR - cannot transfer file using UDP\n" +
			"iperf3: error - cannot transfer file using UDP\n"},
	} {
		_, errOut, code = runTool321(append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, c.args...)...)
		assert.Equal(t, 1, code)
		assert.Equal(t, c.want, errOut, "%v", c.args)
		code321, want := stockClient(t, bin, port, c.args)
		assert.Equal(t, 1, code321)
		assert.Equal(t, want, errorLines.FindAllString(errOut, -1), "%v: 3.21's client's lines", c.args)
	}
	assert.Eventually(t, func() bool {
		return strings.Contains(serr.String(), "iperf3: error - unable to open -F file: No such file or directory\n") &&
			strings.Contains(serr.String(), "iperf3: error - cannot transfer file using UDP\n")
	}, 5*time.Second, 20*time.Millisecond, "our server says why, as 3.21's does: %s", serr.String())
}

// TestFile321: our -F against stock 3.21 and 3.12 servers, and a stock 3.21
// client's -F against our server, checking the file that arrives.
func TestFile321(t *testing.T) {
	src, data := randomFile(t, 2_000_003, 3)
	for _, name := range []string{"3.12", "3.21"} {
		var bin string
		if name == "3.12" {
			bin = peertest.Binary(t, "apt-get install iperf3", "iperf3")
		} else {
			bin = peertest.NewIPerf3(t)
		}
		// Their server discards: the test still ends with the file.
		port := strconv.Itoa(server321(t, bin))
		stdout, errOut, code := runTool321("-c", "127.0.0.1", "-p", port, "-F", src, "-Z")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^\[  4\] .* 1\.91 MBytes .* sender$`, stdout, name)
		// Their server sends its -F file to ours.
		port = strconv.Itoa(server321(t, bin, "-F", src))
		dl := filepath.Join(t.TempDir(), "dl.bin")
		_, errOut, code = runTool321("-c", "127.0.0.1", "-p", port, "-R", "-F", dl, "-n", strconv.Itoa(len(data)))
		require.Equal(t, 0, code, errOut)
		sameFile(t, data, dl, name+" server -F, our -R -F")
	}

	bin := peertest.NewIPerf3(t)
	out := filepath.Join(t.TempDir(), "out.bin")
	port, _, _ := ourServer(t, "-F", out)
	c321 := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
		b, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
		require.NoError(t, err, "%v: %s", all, b)
	}
	c321("-F", src)
	sameFile(t, data, out, "3.21 client -F, our server -F")

	// A 3.21 receiver waits for the rest of a block that never comes (its
	// own server's too): the file it downloads is whole 128 KiB blocks.
	src, data = randomFile(t, 15*128<<10, 4)
	port, _, _ = ourServer(t, "-F", src)
	dl := filepath.Join(t.TempDir(), "dl.bin")
	c321("-R", "-F", dl, "-n", strconv.Itoa(len(data)))
	sameFile(t, data, dl, "3.21 client -R -F, our server -F")
}

// TestFileServerOneTest: a server with -F runs one test at a time, as
// 3.21, unless --max-tests says otherwise.
func TestFileServerOneTest(t *testing.T) {
	for args, want := range map[string]int{"-s -F f": 1, "-s -F f --max-tests 3": 3, "-s": 0} {
		o, err := parseOptions(strings.Fields(args))
		require.NoError(t, err, args)
		cfg := serverConfig(o, io.Discard, io.Discard)
		assert.Equal(t, want, cfg.MaxTests, args)
		assert.Equal(t, want != 0, cfg.SendFrom != nil && cfg.ReceiveTo != nil, args)
	}
}
