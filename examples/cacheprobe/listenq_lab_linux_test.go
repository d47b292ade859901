package main

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

func TestMain(m *testing.M) { pathlab.Main(m) }

// listenDrops reads TcpExt ListenDrops in h's namespace.
func listenDrops(t *testing.T, h *pathlab.Host) int64 {
	t.Helper()
	n, ok := h.Netstat(t)["TcpExtListenDrops"]
	require.True(t, ok, "no TcpExt ListenDrops in /proc/net/netstat")
	return n
}

// The listen-queue lab (issue 43): a redis-server with a listen backlog
// of 1 (linux queues backlog+1) on the address of namespace A's veth, and
// cachebench's connect-per-op in the same namespace, its workers bursting
// connects at it. The server's full queue drops SYNs, which the clients'
// kernels send again after 1 s as for a lost SYN; the endpoint is an
// address of a local interface, so the run reads the namespace's
// TcpExtListenDrops before and after and attributes the SYNs sent again to
// listen_queue. Judged against the counter read by the test around the run
// (within 1: the counter also counts a handshake-completing ACK that the
// full queue dropped, which the client does not send again).
func TestLabListenQueueLocal(t *testing.T) {
	l := pathlab.New(t, &pathlab.Config{Prefix: "npk-lq"})
	if l == nil {
		return
	}
	redis := peertest.Binary(t, "apt-get install redis-server", "redis-server")
	if redis == "" {
		return
	}
	bench := pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/cachebench")
	const port = 6379 // the namespace is the test's own
	l.A.Redis(t, redis, port, "--tcp-backlog", "1")
	addr := fmt.Sprintf("%s:%d", l.A.Addr, port)

	// A handshake-completing ACK that reaches a full queue is dropped and
	// counted too, though the client sent no SYN again (its first command's
	// data waits instead): with 4 workers that is rare, with 8 it was half
	// the drops. A try whose drops exceed the attribution by more than 1 had
	// such ACKs; the test tries again, three times at most, and every try
	// must attribute no more than the queue dropped.
	judged := false
	for try := 1; try <= 3 && !judged; try++ {
		before := listenDrops(t, l.A)
		out := l.A.Run(t, bench, "-json", "-runs", "1", "-engine", "resp", "-addr", addr, "-mode", "connect", "-workers", "4", "-d", "3s")
		dropped := listenDrops(t, l.A) - before
		var o struct {
			Results []struct {
				Runs []*cache.RunResult `json:"runs_detail"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &o), "%s", out)
		require.Len(t, o.Results, 1)
		require.Len(t, o.Results[0].Runs, 1)
		r := o.Results[0].Runs[0]
		lq := r.Causes.Events["listen_queue"]
		t.Logf("try %d: %d attempts, %d errors %v, p99 %v; TcpExtListenDrops +%d; listen_queue %d SYNs on %d connects (added %v), syn_retransmit %d SYNs; tail %q; from %s",
			try, r.Attempts, r.Errors, r.ErrorsByKind, r.Latency.P99, dropped, lq, r.Causes.Connects["listen_queue"],
			r.Causes.Added["listen_queue"], r.Causes.Events["syn_retransmit"], r.Causes.Tail, r.Causes.From)
		assert.Contains(t, r.Causes.From, fmt.Sprintf("rose by %d", dropped), "the run read the same counter")
		assert.LessOrEqual(t, lq, dropped, "no more attributed than the queue dropped")
		assert.Zero(t, r.Causes.Events["syn_retransmit"], "no SYN was lost on the way: every one sent again was the queue's")
		assert.GreaterOrEqual(t, r.Causes.Added["listen_queue"], time.Duration(r.Causes.Connects["listen_queue"])*time.Second,
			"each waited the initial RTO, 1 s")
		judged = dropped > 0 && dropped-lq <= 1
	}
	assert.True(t, judged, "a try whose queue dropped SYNs, each attributed to it (within 1)")
}
