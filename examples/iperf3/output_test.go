package main

import (
	"bytes"
	"context"
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

func TestStrftime(t *testing.T) {
	ts := time.Date(2026, time.November, 3, 7, 5, 9, 0, time.UTC)
	for format, want := range map[string]string{
		"%c ":            "Tue Nov  3 07:05:09 2026 ",
		"%Y-%m-%d %T":    "2026-11-03 07:05:09",
		"%F %R %p %I %j": "2026-11-03 07:05 AM 07 307",
		"%a %A %b %B %e": "Tue Tuesday Nov November  3",
		"%s|%%|%Ey|%Z":   "1793689509|%|26|UTC",
		"%q trailing %":  "%q trailing %",
		"%u%w%C%D%n%t":   "2220" + "11/03/26\n\t",
	} {
		assert.Equal(t, want, strftime(format, ts), format)
	}
}

func FuzzStrftime(f *testing.F) {
	for _, s := range []string{"%c ", "%Y-%m-%d %H:%M:%S", "%", "%E", "%O%", "%%%"} {
		f.Add(s)
	}
	ts := time.Date(2026, time.November, 3, 7, 5, 9, 0, time.UTC)
	f.Fuzz(func(t *testing.T, format string) {
		out := strftime(format, ts)
		if !strings.Contains(format, "%") {
			assert.Equal(t, format, out, "text without conversions is copied")
		}
	})
}

func TestLogfile(t *testing.T) {
	log := filepath.Join(t.TempDir(), "out.log")
	require.NoError(t, os.WriteFile(log, []byte("earlier\n"), 0o600))
	out, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.5", "--logfile", log)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "earlier\nConnecting to host 127.0.0.1"), "3.21 appends: %s", b)
	assert.Contains(t, string(b), "iperf Done.")
}

// TestServerWith321Client: a stock 3.21 client, with server options on
// our side (-s -p -1 -V), runs a test and the server exits after it.
func TestServerWith321Client(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := peertest.FreePort(t)
	var sout, serr peertest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"iperf3", "-s", "-1", "-V", "-p", strconv.Itoa(port)}, &sout, &serr)
	}()
	var out bytes.Buffer
	var err error
	for i := 0; i < 50; i++ {
		out.Reset()
		cmd := exec.Command(bin, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-P", "2", "-R")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err = cmd.Run(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "[SUM]")
	select {
	case c := <-done:
		assert.Equal(t, 0, c, serr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("-1 server did not exit")
	}
	s := sout.String()
	assert.Contains(t, s, "Accepted connection from 127.0.0.1, port ")
	assert.Contains(t, s, "Test Complete. Summary Results:")
	assert.Contains(t, s, "CPU Utilization: local/sender")
}
