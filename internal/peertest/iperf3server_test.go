package peertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContextEndsWithTheTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = Context(t, time.Hour)
		require.NoError(t, ctx.Err(), "alive while the test runs")
		_, ok := ctx.Deadline()
		assert.True(t, ok)
	})
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "cancelled when the test ended")
}

func TestIPerf3ServerListensUntilTheTestEnds(t *testing.T) {
	bin := Binary(t, "apt-get install iperf3", "iperf3")
	var addr string
	t.Run("inner", func(t *testing.T) {
		addr = IPerf3Server(t, bin, "127.0.0.1", "-1")
		require.NotEmpty(t, addr)
		host, _, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1", host)
		_, err = net.Listen("tcp", addr)
		assert.Error(t, err, "the server holds its port")
	})
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the server was killed with the test")
	require.NoError(t, ln.Close())
}

// recordTB records what IPerf3Server does to a test instead of stopping it.
type recordTB struct {
	testing.TB
	failed   bool
	logs     int
	cleanups []func()
}

func (r *recordTB) Helper()               {}
func (r *recordTB) Fatalf(string, ...any) { r.failed = true }
func (r *recordTB) Logf(string, ...any)   { r.logs++ }
func (r *recordTB) Failed() bool          { return r.failed }
func (r *recordTB) Cleanup(f func())      { r.cleanups = append(r.cleanups, f) }

func TestIPerf3ServerThatNeverListens(t *testing.T) {
	exits := filepath.Join(t.TempDir(), "iperf3")
	require.NoError(t, os.WriteFile(exits, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	r := &recordTB{}
	assert.Empty(t, IPerf3Server(r, exits, "127.0.0.1"))
	assert.True(t, r.failed, "a server that never listens fails the test")
	assert.Equal(t, iperf3Starts, r.logs, "one log line a try")
	assert.Empty(t, r.cleanups, "nothing is left running")

	r = &recordTB{}
	assert.Empty(t, IPerf3Server(r, "", "127.0.0.1"), "no binary: Binary has already skipped")
	assert.False(t, r.failed)
}
