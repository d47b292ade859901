package glide_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/glide"
)

// logChildEnv selects what TestLogChild does in a child process: the
// logger is global to a process, so each setting is tried in its own.
const logChildEnv = "NETPERFKIT_GLIDE_LOG_CHILD"

// TestLogChild, in a child process, sets glide's logger as logChildEnv
// says ("default": leaves it alone; "console": "warn" to standard output;
// a path: "warn" to that file) and has a glide client fail to connect,
// which glide logs as a warning.
func TestLogChild(t *testing.T) {
	mode := os.Getenv(logChildEnv)
	switch mode {
	case "":
		t.Skip("run by TestLog* in a child process")
	case "default":
	case "console":
		require.NoError(t, glide.SetLog("warn", ""))
	default:
		require.NoError(t, glide.SetLog("warn", mode))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ep := &cache.Endpoint{Addr: addr, ConnectTimeout: 300 * time.Millisecond, RequestTimeout: 300 * time.Millisecond}
	newClient, err := glide.Engine().Open(context.Background(), ep)
	require.NoError(t, err)
	_, err = newClient(context.Background())
	require.Error(t, err, "nothing listens")
}

// runLogChild runs TestLogChild in a child process and returns its
// standard output and standard error.
func runLogChild(t *testing.T, mode string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), logChildEnv+"="+mode)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "child: %s%s", out.String(), errOut.String())
	return out.String(), errOut.String()
}

// glide's warning about the failed connection, as its logger writes it.
const failedConnecting = "Failed connecting to 127.0.0.1:"

// By default the engine silences glide's logger: a failed connection
// writes nothing to standard output or standard error. The console
// setting shows that the same child would have written the warning.
func TestLogQuietByDefault(t *testing.T) {
	out, errOut := runLogChild(t, "default")
	for _, s := range []string{out, errOut} {
		assert.NotContains(t, s, failedConnecting)
		assert.NotContains(t, s, "logger_core")
		assert.NotContains(t, s, "\x1b[", "no ANSI escape")
	}

	out, _ = runLogChild(t, "console")
	assert.Contains(t, out, failedConnecting, "glide's console logger writes to standard output")
	assert.Contains(t, out, "WARN")
}

// SetLog with a file sends the warning there, in glide's hourly file, and
// not to the console.
func TestLogToFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "logs", "glide.log")
	out, errOut := runLogChild(t, file)
	assert.NotContains(t, out, failedConnecting)
	assert.NotContains(t, errOut, failedConnecting)
	files, err := filepath.Glob(file + ".*")
	require.NoError(t, err)
	require.Len(t, files, 1, "glide.log.YYYY-MM-DD-HH")
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), failedConnecting)
	_, set := os.LookupEnv("GLIDE_LOG_DIR")
	assert.False(t, set, "the parent's environment is untouched")
}

func TestSetLogBadInput(t *testing.T) {
	require.ErrorContains(t, glide.SetLog("loud", ""), `level "loud"`)
	dir := t.TempDir()
	require.ErrorContains(t, glide.SetLog("warn", dir+"/"), "names a directory")
	require.ErrorContains(t, glide.SetLog("warn", dir), "names a directory")
}
