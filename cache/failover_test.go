package cache_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// Margins between the client's recovery and the promotion read from
// CLUSTER NODES. A success on the stopped primary's slots needs the
// replica promoted, so recovery never precedes the last poll that still
// showed it a replica (less the success log's 2 ms resolution). It follows
// the promotion by at most what the client needs to notice: the
// operation in flight times out (RequestTimeout), the slot map is
// reloaded and the operation resent (RequestTimeout again at worst), plus
// recoveryLag for a loaded machine's scheduling.
const (
	failoverRequestTimeout = 500 * time.Millisecond
	recoveryLag            = 2 * time.Second
)

// promotion is when a poll of CLUSTER NODES first showed the replica as
// a primary: the promotion happened between before and after.
type promotion struct{ before, after time.Time }

// failoverDrill runs cfg against s and, once the run is under way,
// SIGSTOPs primary 1 (not the seed, so that connect-per-op clients can
// still load the slot map) and waits for its replica to be promoted by the
// cluster's failure detection. It returns the run, when the primary was
// stopped, its slots as CLUSTER NODES names them, and the promotion.
func failoverDrill(t *testing.T, s *cachetest.Server, cfg *cache.WorkloadConfig) (*cache.RunResult, time.Time, string, promotion) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary, replica := s.Addrs[1], s.Addrs[4]
	nodes, err := s.Do(ctx, primary, "CLUSTER", "NODES")
	require.NoError(t, err)
	slots := mySlots(t, nodes)

	ep := s.Endpoint()
	ep.RequestTimeout = failoverRequestTimeout
	type out struct {
		r   *cache.RunResult
		err error
	}
	done := make(chan out, 1)
	started := make(chan struct{})
	var once sync.Once
	cfg.OnOperation = func(time.Time, time.Time, error) { once.Do(func() { close(started) }) }
	go func() {
		r, err := cache.Run(ctx, ep, cfg)
		done <- out{r, err}
	}()
	<-started
	time.Sleep(cfg.Duration / 5)
	resume, err := s.Pause(primary)
	require.NoError(t, err)
	stopped := time.Now()
	defer func() { require.NoError(t, resume()) }()
	var p promotion
	for {
		before := time.Now()
		n, err := s.Do(ctx, replica, "CLUSTER", "NODES")
		if err == nil && strings.Contains(myLine(n), "master") {
			p.after = time.Now()
			break
		}
		require.NoError(t, ctx.Err(), "the replica was never promoted")
		p.before = before
		time.Sleep(10 * time.Millisecond)
	}
	o := <-done
	require.NoError(t, o.err)
	return o.r, stopped, slots, p
}

// myLine returns the "myself" line of a CLUSTER NODES reply.
func myLine(nodes string) string {
	for l := range strings.SplitSeq(nodes, "\n") {
		if strings.Contains(l, "myself") {
			return l
		}
	}
	return ""
}

// mySlots returns the node's slot ranges as SlotRanges names them.
func mySlots(t *testing.T, nodes string) string {
	f := strings.Fields(myLine(nodes))
	require.Greater(t, len(f), 8, "CLUSTER NODES: %q", nodes)
	return strings.Join(f[8:], ",")
}

// Through a failover, each mode's result accounts for every failure (by
// kind and by slot range, all on the stopped primary's slots) and its
// recovery agrees with the promotion that CLUSTER NODES shows.
func TestFailoverAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster failover takes seconds")
	}
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: true, Replicas: 1, StartTimeout: time.Minute,
		ExtraArgs: []string{"--cluster-node-timeout", "1000"}})
	// Each mode fails a primary over, so each gets a cluster of its own.
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		t.Run(string(mode), func(t *testing.T) {
			srv := s
			if mode == cache.ConnectPerOp {
				srv = cachetest.NewServer(t, &cachetest.Config{Cluster: true, Replicas: 1, StartTimeout: time.Minute,
					ExtraArgs: []string{"--cluster-node-timeout", "1000"}})
			}
			r, stopped, slots, p := failoverDrill(t, srv, &cache.WorkloadConfig{Mode: mode, Duration: 6 * time.Second})
			var byKind int64
			for _, n := range r.ErrorsByKind {
				byKind += n
			}
			require.Positive(t, r.Errors, "operations on a stopped primary fail")
			require.Equal(t, r.Errors, byKind, "the kinds add up to the failures: %v", r.ErrorsByKind)
			require.Len(t, r.SlotRanges, 3)
			stoppedRange, ok := r.SlotRanges[slots]
			require.True(t, ok, "the stopped primary's slots %q are a range: %v", slots, r.SlotRanges)
			// The other primaries' slots can fail too, with CLUSTERDOWN:
			// between marking the primary failed and promoting its replica
			// the cluster refuses every slot (cluster-require-full-coverage).
			var failed int64
			for _, sr := range r.SlotRanges {
				failed += sr.Failed
			}
			require.Equal(t, r.Errors, failed, "the ranges add up to the failures")
			require.Positive(t, stoppedRange.Failed)
			require.Positive(t, stoppedRange.Recovery, "the client recovered on the promoted replica: %+v", stoppedRange)
			require.GreaterOrEqual(t, stoppedRange.LongestGap, stoppedRange.Recovery-50*time.Millisecond)
			recovered := stopped.Add(stoppedRange.Recovery)
			t.Logf("%s: stopped, promoted after %v-%v, recovered after %v (%v after the promotion was seen); errors %v, retried %d; ranges %+v",
				mode, p.before.Sub(stopped), p.after.Sub(stopped), stoppedRange.Recovery, recovered.Sub(p.after), r.ErrorsByKind, r.Retried, r.SlotRanges)
			// The first failure starts at most one operation before the
			// stop (the one in flight), so recovered is at most that much
			// early; 50 ms covers it and the log's resolution.
			require.False(t, recovered.Before(p.before.Add(-50*time.Millisecond)), "recovery precedes the promotion")
			require.False(t, recovered.After(p.after.Add(2*failoverRequestTimeout+recoveryLag)), "recovery long after the promotion")
			if mode == cache.Pooled {
				require.Positive(t, r.Retried, "a pooled client resends on the promoted replica")
			}
		})
	}
}
