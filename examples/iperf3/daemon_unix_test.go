//go:build linux || darwin

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestDaemon builds the tool and runs a -D server: the parent exits 0 at
// once, the server runs in its own session with the pid in -I's file,
// serves a test, logs to --logfile, and removes the file when killed.
func TestDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tool")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "iperf3")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	pidfile, logfile := filepath.Join(dir, "s.pid"), filepath.Join(dir, "s.log")
	port := strconv.Itoa(peertest.FreePort(t))
	start := time.Now()
	out, err := exec.Command(bin, "-s", "-D", "-p", port, "-I", pidfile, "--logfile", logfile).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Empty(t, out)
	assert.Less(t, time.Since(start), 5*time.Second)

	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "no pid file")
		b, _ := os.ReadFile(pidfile)
		pid, _ = strconv.Atoi(string(b))
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	sid, err := unix.Getsid(pid)
	require.NoError(t, err)
	assert.Equal(t, pid, sid, "the server leads its own session")

	code := -1
	for i := 0; i < 50 && code != 0; i++ {
		if _, _, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", port, "-t", "0.5"); code != 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	assert.Equal(t, 0, code)
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the pid file stayed")
	}
	log, err := os.ReadFile(logfile)
	require.NoError(t, err)
	assert.Contains(t, string(log), "Accepted connection from 127.0.0.1")
	assert.Contains(t, string(log), "iperf3: interrupt - the server has terminated by signal Terminated(15)")
}
