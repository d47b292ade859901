package glide_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/glide"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// A SIGSTOPped server (issue 43): its kernel still completes each
// handshake, so nothing is refused, but no reply comes, and glide's client
// creation runs out of its connection budget ("connection attempt timed
// out"). Each such failure is classified by glide's typed errors as
// cache.ErrConnectTimeout and attributed to the client's budget, one for
// one; the causes say glide's own retries cannot be counted.
func TestGlideBudgetOfStoppedServer(t *testing.T) {
	bin := peertest.Binary(t, "apt-get install redis-server", "redis-server")
	if bin == "" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	srv := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGCONT)
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)

	ep := &cache.Endpoint{Addr: addr, ConnectTimeout: 300 * time.Millisecond, RequestTimeout: 300 * time.Millisecond}
	cfg := &cache.WorkloadConfig{Engine: glide.Engine(), Mode: cache.ConnectPerOp, Workers: 1, Duration: 3 * time.Second, KeySpace: 10}
	cfg.Interleave = afterOps(t, func() { require.NoError(t, srv.Process.Signal(syscall.SIGSTOP)) })
	r, err := cache.Run(context.Background(), ep, cfg)
	t.Logf("%d attempts, %d errors %v, first %q; causes %v", r.Attempts, r.Errors, r.ErrorsByKind, r.FirstError, r.Causes.Connects)
	require.NoError(t, err, "operations succeeded before the stop")
	require.Positive(t, r.ErrorsByKind[cache.ErrConnectTimeout], "client creations ran out of the budget")
	assert.Contains(t, r.ErrorExamples[cache.ErrConnectTimeout], "timed out")
	assert.Equal(t, r.ErrorsByKind[cache.ErrConnectTimeout], r.Causes.Connects["client_budget"], "each is attributed to the budget")
	assert.Contains(t, r.Causes.From, "retries cannot be counted")
}
