package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// clusterNodeTimeout is the local clusters' cluster-node-timeout: a
// stopped primary's replica is promoted about two seconds later, so that
// the failover drill fits the report's time.
const clusterNodeTimeout = "1000"

// localCluster is one local E3 configuration: its label and how cachetest
// starts it.
type localCluster struct {
	label string
	cfg   cachetest.Config
}

// localClusterConfigs are the clusters E3 runs against without -cache,
// for one server binary: the field's N1 (node-based, cluster mode, no
// TLS) and N2 (with TLS; here with an ACL user too, so that AUTH is a
// phase), each three primaries with a replica.
func localClusterConfigs(bin string) []localCluster {
	name := strings.TrimSuffix(filepath.Base(bin), "-server") + " cluster"
	base := cachetest.Config{Binary: bin, Cluster: true, Replicas: 1, StartTimeout: time.Minute,
		ExtraArgs: []string{"--cluster-node-timeout", clusterNodeTimeout}}
	tlsACL := base
	tlsACL.TLS, tlsACL.User, tlsACL.Password = true, "bench", "bench-pw"
	return []localCluster{{name, base}, {name + " TLS+ACL", tlsACL}}
}

// ServerCounts is what a cluster's nodes saw of one engine's
// connect-per-op runs, read from INFO before and after: how a cluster
// client's creation looks from outside, whatever the client. The
// counts include each run's endpoint check and slot-map read (two
// connections and a CLUSTER SLOTS per run, a rounding error over its
// thousands of operations) and exclude the reads of INFO themselves.
type ServerCounts struct {
	// Operations is the runs' attempts, the divisor of every per-op figure.
	Operations int64 `json:"operations"`
	// ConnectsPerOp is the connections the nodes accepted per operation,
	// all nodes together; Nodes how many nodes accepted at least one
	// connection per 100 operations (the nodes the clients reach).
	ConnectsPerOp float64 `json:"connects_per_op"`
	Nodes         int     `json:"nodes_connected"`
	// CommandsPerOp is the commands the nodes ran per operation, by name
	// as INFO commandstats gives it ("get", "cluster|slots", "hello").
	CommandsPerOp map[string]float64 `json:"commands_per_op"`
}

// nodeCounts is one node's INFO counters.
type nodeCounts struct {
	conns    int64
	commands map[string]int64
}

// readCounts reads every node's connections received and commands run.
func readCounts(ctx context.Context, s *cachetest.Server) ([]nodeCounts, error) {
	out := make([]nodeCounts, len(s.Addrs))
	for i, a := range s.Addrs {
		info, err := s.Do(ctx, a, "INFO", "stats", "commandstats")
		if err != nil {
			return nil, err
		}
		out[i] = parseCounts(info)
	}
	return out, nil
}

// parseCounts reads total_connections_received and the cmdstat_ calls
// of an INFO reply.
func parseCounts(info string) nodeCounts {
	c := nodeCounts{commands: map[string]int64{}}
	for l := range strings.SplitSeq(info, "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "total_connections_received:"); ok {
			c.conns, _ = strconv.ParseInt(v, 10, 64)
		}
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "cmdstat_"), ":calls=")
		if !ok || !strings.HasPrefix(l, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		c.commands[name], _ = strconv.ParseInt(calls, 10, 64)
	}
	return c
}

// serverCounts turns two readings around ops operations into per-op
// figures, leaving out the readings' own connection, INFO and AUTH.
func serverCounts(before, after []nodeCounts, ops int64, auth bool) *ServerCounts {
	if ops <= 0 || len(before) != len(after) {
		return nil
	}
	sc := &ServerCounts{Operations: ops, CommandsPerOp: map[string]float64{}}
	var conns int64
	for i := range before {
		d := after[i].conns - before[i].conns - 1 // the after reading's
		conns += d
		if float64(d)/float64(ops) >= 0.01 {
			sc.Nodes++
		}
		for name, n := range after[i].commands {
			n -= before[i].commands[name]
			switch {
			case name == "info":
				n-- // the before reading's
			case name == "auth" && auth:
				n-- // the after reading's
			}
			if n > 0 {
				sc.CommandsPerOp[name] += float64(n) / float64(ops)
			}
		}
	}
	sc.ConnectsPerOp = float64(conns) / float64(ops)
	return sc
}

// String is the counts in one cell: connects over nodes, then commands,
// most frequent first.
func (sc *ServerCounts) String() string {
	if sc == nil {
		return "-"
	}
	names := make([]string, 0, len(sc.CommandsPerOp))
	for n := range sc.CommandsPerOp {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := sc.CommandsPerOp[b] - sc.CommandsPerOp[a]; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	var cmds []string
	for _, n := range names {
		if v := sc.CommandsPerOp[n]; v >= 0.01 {
			cmds = append(cmds, fmt.Sprintf("%s %.2f", strings.ToUpper(strings.ReplaceAll(n, "|", " ")), v))
		}
	}
	return fmt.Sprintf("%.2f connects over %d node(s); %s", sc.ConnectsPerOp, sc.Nodes, strings.Join(cmds, ", "))
}

// countsBefore reads the nodes' counters before t's connect-per-op runs
// when t is a local cluster; nil otherwise.
func (o cacheOptions) countsBefore(ctx context.Context, t cacheTarget, mode cache.ConnMode) (*cachetest.Server, []nodeCounts) {
	srv := o.Local[t.Label]
	if mode != cache.ConnectPerOp || srv == nil || len(srv.Addrs) < 2 {
		return nil, nil
	}
	before, err := readCounts(ctx, srv)
	if err != nil {
		return nil, nil
	}
	return srv, before
}

// countsAfter reads them again and returns the per-op figures, nil when
// a node could not be read.
func countsAfter(ctx context.Context, srv *cachetest.Server, before []nodeCounts, ops int64, auth bool) *ServerCounts {
	after, err := readCounts(ctx, srv)
	if err != nil {
		return nil
	}
	return serverCounts(before, after, ops, auth)
}

// writeServerCounts prints, per local cluster and engine, what the nodes
// saw of one connect-per-op operation: a cluster client's creation from
// outside.
func writeServerCounts(w io.Writer, sec *CacheSection) {
	var lines []string
	for _, ce := range sec.Endpoints {
		for _, wl := range ce.Workloads {
			if wl.ConnectCounts != nil {
				lines = append(lines, fmt.Sprintf("%s %s: %s", ce.Label, wl.Engine, wl.ConnectCounts))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "connect-per-op on a cluster, seen from its nodes (INFO before and after, per operation): connections accepted, on how many nodes, and the commands run")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// connectStepsRun is the length of the traced connect-per-op run that
// times a cluster client's creation step by step.
const connectStepsRun = 500 * time.Millisecond

// ConnectSteps is one traced connect-per-op run of the resp engine on a
// cluster, step by step: what a cluster client's creation does (connect to
// the seed, read the topology with CLUSTER SLOTS, connect to the node the
// key routes to when it is not the seed), then the command. The close is
// left out: a client's Close releases its connections without a trace.
type ConnectSteps struct {
	// Operations is the run's attempts.
	Operations int64 `json:"operations"`
	// Steps are in order; a step that never ran is left out.
	Steps []ConnectStep `json:"steps"`
}

// ConnectStep is one step: how often it ran per operation and its median.
type ConnectStep struct {
	Name     string  `json:"name"`
	PerOp    float64 `json:"per_op"`
	MedianUs float64 `json:"median_us"`
}

// stepOrder names the steps in the order a connect-per-op operation
// takes them.
var stepOrder = []string{"seed TCP", "seed TLS", "seed AUTH", "CLUSTER SLOTS", "node TCP", "node TLS", "node AUTH", "command"}

// connectSteps runs the resp engine connect-per-op on a cluster endpoint
// for connectStepsRun with one worker, under a client trace that files each
// phase as a step: the seed's or another node's.
func connectSteps(ctx context.Context, ep *cache.Endpoint) (*ConnectSteps, error) {
	var mu sync.Mutex
	durs := map[string][]time.Duration{}
	done := func(p cache.PhaseInfo) {
		if p.Err != nil {
			return
		}
		where := "node "
		if p.Addr == ep.Addr {
			where = "seed "
		}
		var name string
		switch p.Phase {
		case cache.PhaseConnect:
			name = where + "TCP"
		case cache.PhaseTLS:
			name = where + "TLS"
		case cache.PhaseAuth:
			name = where + "AUTH"
		case cache.PhaseClusterSlots:
			name = "CLUSTER SLOTS"
		case cache.PhaseCommand:
			name = "command"
		default: // close: a client's Close releases its connections untraced
			return
		}
		mu.Lock()
		durs[name] = append(durs[name], p.Duration)
		mu.Unlock()
	}
	r, err := cache.Run(cache.WithClientTrace(ctx, nil, done), ep, &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 1, Duration: connectStepsRun})
	if err != nil {
		return nil, err
	}
	cs := &ConnectSteps{Operations: r.Attempts}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range stepOrder {
		d := durs[name]
		if len(d) == 0 || r.Attempts == 0 {
			continue
		}
		slices.Sort(d)
		cs.Steps = append(cs.Steps, ConnectStep{Name: name, PerOp: float64(len(d)) / float64(r.Attempts), MedianUs: float64(d[len(d)/2]) / 1e3})
	}
	return cs, nil
}

// writeConnectSteps prints each cluster endpoint's steps on one line.
func writeConnectSteps(w io.Writer, sec *CacheSection) {
	var lines []string
	for _, ce := range sec.Endpoints {
		if ce.ConnectSteps == nil {
			continue
		}
		var parts []string
		for _, s := range ce.ConnectSteps.Steps {
			parts = append(parts, fmt.Sprintf("%s %s (%.2f/op)", s.Name, us(s.MedianUs), s.PerOp))
		}
		lines = append(lines, fmt.Sprintf("%s: %s", ce.Label, strings.Join(parts, ", ")))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "resp connect-per-op on a cluster, step by step (median us, and how often per operation; the seed is the endpoint's node, a node the key's primary when it is another):")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
