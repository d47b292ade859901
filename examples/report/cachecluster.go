package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
