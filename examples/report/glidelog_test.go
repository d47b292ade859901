//go:build cgo && unix

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportGlideLogNeverOnStdout builds the tool with cgo (valkey-glide's
// core logger writes to the process's standard output, which only a child
// process shows) and runs E3's glide engine against an endpoint that
// accepts connections and closes them, so that glide fails to connect and
// logs: by default nothing of glide's log reaches stdout or stderr; with
// -glide-log stderr it goes to stderr, with -glide-log FILE to glide's
// hourly file; never to stdout, where the tables are.
func TestReportGlideLogNeverOnStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tool")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "report")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	addr := closingListener(t)
	cfg := filepath.Join(dir, "endpoints.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("endpoints:\n  - label: X\n    addr: "+addr+"\n    connect_timeout: 500ms\n    request_timeout: 500ms\n"), 0o600))
	logFile := filepath.Join(dir, "logs", "glide.log")

	for _, c := range []struct {
		name, flag          string
		inStderr, inLogFile bool
	}{
		{"default quiet", "", false, false},
		{"stderr", "stderr", true, false},
		{"file", logFile, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, "-skip", "paths,matrix", "-imds", "off", "-progress", "off", "-engines", "glide",
				"-cache", "X", "-cache-config", cfg, "-cache-d", "300ms", "-runs", "1", "-probes", "2", "-glide-log", c.flag)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
			assert.Contains(t, stdout.String(), "X glide pool: FAILED: ", "glide failed to connect")
			assert.NotContains(t, stdout.String(), "logger_core", "glide's log never reaches the tables")
			assert.Equal(t, c.inStderr, strings.Contains(stderr.String(), "logger_core"), "stderr: %s", stderr.String())
			files, err := filepath.Glob(logFile + ".*")
			require.NoError(t, err)
			var logged []byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				logged = append(logged, b...)
			}
			assert.Equal(t, c.inLogFile, bytes.Contains(logged, []byte("logger_core")), "log files %v", files)
		})
	}
}

// closingListener accepts connections on a free loopback port and closes
// each at once, until the test ends.
func closingListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	return ln.Addr().String()
}
