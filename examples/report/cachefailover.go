package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
)

// The failover drill: each run lasts failoverRun; failoverStop into it a
// primary is SIGSTOPped and the cluster's failure detection
// (cluster-node-timeout 1000 ms) promotes its replica about two seconds
// later. Operations time out after failoverRequestTimeout, the time a
// worker waits on the stopped primary before it gives up or retries.
const (
	failoverRun            = 5 * time.Second
	failoverStop           = time.Second
	failoverRequestTimeout = 500 * time.Millisecond
	// failoverSettle bounds the wait, after a run, for the resumed old
	// primary to rejoin as a replica before the next drill.
	failoverSettle = 30 * time.Second
)

// CacheFailover is E3's failover drill on a local cluster: a pooled and a
// connect-per-op run per engine, during each of which one primary stops
// (SIGSTOP) and its replica is promoted by the cluster's failure
// detection. The drills alternate between a primary and its replica, so
// that each run stops the shard's current primary.
type CacheFailover struct {
	// Label is the cluster's E3 label.
	Label string `json:"label"`
	// Setup says how the fault was made, in words.
	Setup string         `json:"setup"`
	Runs  []*FailoverRun `json:"runs"`
	// Skipped says why the drill did not run.
	Skipped string `json:"skipped,omitempty"`
}

// FailoverRun is one engine and mode through one failover.
type FailoverRun struct {
	Engine string         `json:"engine"`
	Mode   cache.ConnMode `json:"mode"`
	// Primary is the node stopped and Slots its hash slots, the key of
	// Result.SlotRanges that the fault hit.
	Primary string `json:"primary"`
	Slots   string `json:"slots"`
	// Promoted runs from the SIGSTOP to the first CLUSTER NODES poll
	// (every 10 ms) that showed the replica as a primary.
	Promoted time.Duration `json:"promoted_ns"`
	// Result is the run; its SlotRanges, ErrorsByKind and Retried are the
	// drill's outcome.
	Result *cache.RunResult `json:"result,omitempty"`
	// Error is why the run or the drill failed.
	Error string `json:"error,omitempty"`
}

// runFailover runs the drill on the first local plain cluster, nil when
// there is none (-cache endpoints, or no cluster started).
func runFailover(ctx context.Context, targets []cacheTarget, o cacheOptions, prog *progress) *CacheFailover {
	var t cacheTarget
	var srv *cachetest.Server
	for _, c := range targets {
		if s := o.Local[c.Label]; s != nil && len(s.Addrs) == 6 && !c.Endpoint.TLS {
			t, srv = c, s
			break
		}
	}
	if srv == nil {
		return nil
	}
	sec := &CacheFailover{Label: t.Label, Setup: fmt.Sprintf("one primary SIGSTOPped %v into each %v run; its replica promoted by failure detection (cluster-node-timeout %s ms); request timeout %v; %d workers",
		failoverStop, failoverRun, clusterNodeTimeout, failoverRequestTimeout, o.Workers)}
	primary, replica := srv.Addrs[1], srv.Addrs[4]
	for _, eng := range o.Engines {
		for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
			prog.Start(fmt.Sprintf("E3 cache: %s %s %s through a failover", t.Label, cachecli.Name(eng), mode), failoverRun+failoverStop)
			fr := drill(ctx, srv, t.Endpoint, eng, mode, o.Workers, primary, replica)
			sec.Runs = append(sec.Runs, fr)
			if ctx.Err() != nil {
				return sec
			}
			if err := rejoin(ctx, srv, primary, replica); err != nil {
				fr.Error = strings.TrimPrefix(fr.Error+"; ", "; ") + err.Error()
				return sec
			}
			primary, replica = replica, primary
		}
	}
	return sec
}

// drill runs one engine and mode against srv while primary stops and
// replica takes over. The primary stays stopped until rejoin.
func drill(ctx context.Context, srv *cachetest.Server, ep0 *cache.Endpoint, eng cache.Engine, mode cache.ConnMode, workers int, primary, replica string) *FailoverRun {
	fr := &FailoverRun{Engine: cachecli.Name(eng), Mode: mode, Primary: primary}
	nodes, err := srv.Do(ctx, primary, "CLUSTER", "NODES")
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	fr.Slots = mySlots(nodes)
	ep := *ep0
	ep.RequestTimeout = failoverRequestTimeout
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		r, err := cache.Run(ctx, &ep, &cache.WorkloadConfig{Engine: eng, Mode: mode, Workers: workers, Duration: failoverRun,
			OnOperation: func(time.Time, time.Time, error) { once.Do(func() { close(started) }) }})
		fr.Result = r
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		fr.Error = fmt.Sprintf("the run ended before the fault: %v", err)
		return fr
	}
	time.Sleep(failoverStop)
	if _, err := srv.Pause(primary); err != nil {
		fr.Error = err.Error()
	} else {
		stopped := time.Now()
		if err := awaitRole(ctx, srv, replica, "master", failoverRun+failoverSettle); err != nil {
			fr.Error = err.Error()
		} else {
			fr.Promoted = time.Since(stopped)
		}
	}
	if err := <-done; err != nil {
		fr.Error = strings.TrimPrefix(fr.Error+"; ", "; ") + err.Error()
	}
	return fr
}

// rejoin resumes the stopped primary and waits until it follows the
// promoted replica with its link up and every node sees the cluster ok.
func rejoin(ctx context.Context, srv *cachetest.Server, stopped, promoted string) error {
	resume, err := srv.Pause(stopped) // already stopped: SIGSTOP again is harmless
	if err != nil {
		return err
	}
	if err := resume(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, failoverSettle)
	defer cancel()
	for {
		info, err := srv.Do(ctx, stopped, "INFO", "REPLICATION")
		if err == nil && strings.Contains(info, "master_link_status:up") && clusterOK(ctx, srv) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the resumed primary %s did not rejoin as a replica of %s: %w", stopped, promoted, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterOK reports whether every node says cluster_state:ok.
func clusterOK(ctx context.Context, srv *cachetest.Server) bool {
	for _, a := range srv.Addrs {
		if info, err := srv.Do(ctx, a, "CLUSTER", "INFO"); err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}

// awaitRole polls addr's CLUSTER NODES every 10 ms until its own line has
// the flag role, for at most limit.
func awaitRole(ctx context.Context, srv *cachetest.Server, addr, role string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		n, err := srv.Do(ctx, addr, "CLUSTER", "NODES")
		if err == nil && slices.Contains(strings.Split(flagsOf(n), ","), role) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not %s after %v: %w", addr, role, limit, errors.Join(ctx.Err(), err))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// myLine is the "myself" line of a CLUSTER NODES reply.
func myLine(nodes string) []string {
	for l := range strings.SplitSeq(nodes, "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.Contains(f[2], "myself") {
			return f
		}
	}
	return nil
}

// flagsOf is the node's own flags ("myself,master").
func flagsOf(nodes string) string {
	if f := myLine(nodes); f != nil {
		return f[2]
	}
	return ""
}

// mySlots is the node's own slot ranges, as cache.RunResult.SlotRanges
// names them ("5461-10922").
func mySlots(nodes string) string {
	if f := myLine(nodes); len(f) > 8 {
		return strings.Join(f[8:], ",")
	}
	return ""
}

// writeFailover prints the drill's table: per engine and mode, the
// failures by kind, retries, the promotion, the recovery and the longest
// gaps, with the run's p99 and rate beside them.
func writeFailover(w io.Writer, f *CacheFailover) error {
	if f == nil {
		return nil
	}
	fmt.Fprintf(w, "\nE3 cache: through a failover on %s (%s)\n", f.Label, f.Setup)
	if f.Skipped != "" {
		fmt.Fprintf(w, "  not run: %s\n", f.Skipped)
		return nil
	}
	t := newTable(w, "engine", "mode", "attempts", "failed (by kind)", "retried", "lost", "promoted (ms)", "recovery (ms)", "gap: stopped slots (ms)", "gap: other slots (ms)", "p99 (us)", "ops/s")
	var notes []string
	for _, fr := range f.Runs {
		r := fr.Result
		if r == nil {
			t.row(fr.Engine, string(fr.Mode), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
		} else {
			hit := r.SlotRanges[fr.Slots]
			var other time.Duration
			for k, sr := range r.SlotRanges {
				if k != fr.Slots {
					other = max(other, sr.LongestGap)
				}
			}
			retried := fmt.Sprint(r.Retried)
			if fr.Engine != cachecli.Resp {
				retried = "internal"
			}
			t.row(fr.Engine, string(fr.Mode), fmt.Sprint(r.Attempts), kindsText(r.ErrorsByKind), retried, fmt.Sprint(r.Errors),
				msText(fr.Promoted), recoveryText(hit), msText(hit.LongestGap), msText(other), us(float64(r.Latency.P99)/1e3), fmt.Sprintf("%.0f", r.OpsPerSec))
		}
		if fr.Error != "" {
			notes = append(notes, fmt.Sprintf("%s %s: %s", fr.Engine, fr.Mode, fr.Error))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "failed: operations that failed, by kind (every failure is lost: the run does not redo it); retried: operations the resp engine resent once after reloading the slot map (glide retries inside the client, uncounted);")
	fmt.Fprintln(w, "recovery: from the first failure on the stopped primary's slots to the first success on them (1 ms resolution), beside the promotion seen in CLUSTER NODES; gap: the longest time without a success on those slots, and on the others (workers waiting on the stopped primary stall them too)")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

// kindsText is failures by kind, most first ("timeout 20, cluster 2").
func kindsText(m map[cache.ErrorKind]int64) string {
	if len(m) == 0 {
		return "0"
	}
	ks := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(ks, func(a, b cache.ErrorKind) int { return int(m[b] - m[a]) })
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", string(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

func msText(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
}

// recoveryText is a range's recovery, "none" when it failed and never
// succeeded again.
func recoveryText(sr cache.SlotRange) string {
	if sr.Failed > 0 && sr.Recovery == 0 {
		return "none"
	}
	return msText(sr.Recovery)
}
