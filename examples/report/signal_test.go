//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportSIGINT builds the tool, interrupts it with SIGINT while the E2
// matrix runs, and checks that it printed and wrote what had finished (E1
// complete, the matrix rows so far) and exited non-zero.
func TestReportSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tool")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "report")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	outDir := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "-skip", "cache", "-imds", "off", "-progress", "on",
		"-d", "1s", "-rtt-d", "1s", "-streams", "2", "-mstreams", "2", "-rates", "100M", "-out", outDir)
	var stdout peertest.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	// The progress line names each step as it starts: interrupt once the
	// third matrix step runs, so two rows have finished.
	var progress strings.Builder
	sc := bufio.NewScanner(stderr)
	sc.Split(splitCR)
	signalled := false
	for sc.Scan() {
		progress.WriteString(sc.Text() + "\n")
		if !signalled && strings.Contains(sc.Text(), "E2 matrix: TCP 1 stream download") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			signalled = true
		}
	}
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the tool did not exit after SIGINT")
	}
	require.True(t, signalled, "never saw the matrix step; stderr: %s", progress.String())
	var ee *exec.ExitError
	require.True(t, errors.As(werr, &ee), "exits non-zero: %v", werr)
	assert.Equal(t, 130, ee.ExitCode())

	text := stdout.String()
	assert.Contains(t, text, "run metadata")
	assert.Contains(t, text, "E1 paths")
	assert.Contains(t, text, "E2 matrix")
	assert.Contains(t, text, "INTERRUPTED")
	assert.NotContains(t, text, "E3 cache")

	b, err := os.ReadFile(filepath.Join(outDir, "report.json"))
	require.NoError(t, err)
	var rep struct {
		Interrupted bool            `json:"interrupted"`
		Error       string          `json:"error"`
		Metadata    json.RawMessage `json:"metadata"`
		Paths       *PathsSection   `json:"paths"`
		Matrix      *MatrixSection  `json:"matrix"`
		Cache       json.RawMessage `json:"cache"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Interrupted)
	assert.Contains(t, rep.Error, "context canceled")
	assert.NotEmpty(t, rep.Metadata)
	require.NotNil(t, rep.Paths)
	require.Len(t, rep.Paths.Targets, 1)
	// The rates themselves may be 0: a loaded machine can hold loopback
	// data back for a whole 1 s run (issue 15).
	require.NotNil(t, rep.Matrix)
	require.GreaterOrEqual(t, len(rep.Matrix.Rows), 2, "the rows that finished")
	require.Less(t, len(rep.Matrix.Rows), 5, "the rows after the interrupt did not run")
	for _, r := range rep.Matrix.Rows[:2] {
		assert.Empty(t, r.Error, r.Scenario)
		assert.InDelta(t, 100*r.ReceivedBitsPerSecond/5e9, r.PercentOfLimit, 1e-6, r.Scenario)
	}
	assert.Equal(t, "null", string(rep.Cache), "the cache section never started")
	_, err = os.Stat(filepath.Join(outDir, "rtt-spectrum.svg"))
	assert.NoError(t, err, "plots of what finished are drawn")
}

// splitCR splits the progress output at carriage returns and newlines.
func splitCR(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		if b == '\r' || b == '\n' {
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
