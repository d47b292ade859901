package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardsMerge runs two pingpong shards in-process against one server
// and merges their results: the merged count is the sum of the shards'
// counts in the common window.
func TestShardsMerge(t *testing.T) {
	srv, err := latency.NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServePacket(ctx, pc) }()
	t.Cleanup(func() { cancel(); <-done })

	dir := t.TempDir()
	at := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			var out, stderr bytes.Buffer
			errs <- run([]string{"-addr", pc.LocalAddr().String(), "-t", "1s", "-interval", "100ms",
				"-shard", fmt.Sprintf("%d/2", i), "-start-at", at, "-out", filepath.Join(dir, fmt.Sprintf("%d.json", i))}, &out, &stderr)
		}()
	}
	for range 2 {
		require.NoError(t, <-errs)
	}
	files := []string{filepath.Join(dir, "0.json"), filepath.Join(dir, "1.json")}
	m, err := shard.MergeFiles(files, nil)
	require.NoError(t, err)
	assert.Equal(t, "pingpong", m.Tool)
	var sum int64
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		r, err := shard.Decode(fh)
		fh.Close()
		require.NoError(t, err)
		for _, iv := range r.Intervals {
			if !iv.Start.Before(m.WindowStart) && !iv.End.After(m.WindowEnd) {
				sum += iv.Count
			}
		}
	}
	assert.Equal(t, sum, m.Count)
	assert.Positive(t, m.Count)
	// Each shard's round trips are recorded as they come back (OnMessage,
	// which also hears of the messages PingPong's own Summary leaves out
	// in its cool-down): the intervals hold at least every one the Detail
	// measured, but for the last (closed loop: one in flight) when its
	// reply came after the window.
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		r, err := shard.Decode(fh)
		fh.Close()
		require.NoError(t, err)
		var pp latency.PingPongResult
		require.NoError(t, json.Unmarshal(r.Detail, &pp))
		var recorded int64
		for _, iv := range r.Intervals {
			recorded += iv.Count
		}
		assert.GreaterOrEqual(t, recorded, pp.Observations-1, "shard %s", f)
	}
}

func TestShardPastStartRefused(t *testing.T) {
	var out, stderr bytes.Buffer
	err := run([]string{"-shard", "0/2", "-start-at", "2020-01-01T00:00:00Z", "-out", filepath.Join(t.TempDir(), "x.json")}, &out, &stderr)
	require.ErrorIs(t, err, shard.ErrPastStart)
}
