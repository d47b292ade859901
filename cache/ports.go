package cache

import (
	"github.com/netperfkit/netperfkit/cache/internal/ports"
)

// LimitedByPorts is PortUsage.LimitedBy when the client host's ephemeral
// port range, not the client or the server, set the cost of the run's
// connects.
const LimitedByPorts = "client ephemeral ports"

// Shares of the ephemeral range blocked towards the endpoint above which a
// connect-per-operation run counts as limited by the kernel's port search:
// at the start (the whole run searched a crowded range) or at the end.
// connect(2) tries the even ports of the range first, so 40% of the range
// is 80% of those. Measured across a veth (issue 31): runs that started at
// 0% and 26% were not slowed; runs that started at 46%, 51% and 75% ran
// 8-50 times slower (1,541 ops/s against 12,878; 436 against 6,875).
const (
	portsLimitedBefore = 0.4
	portsLimitedAfter  = 0.9
)

// PortSnapshot is the client host's use of its ephemeral TCP port range
// towards the endpoint at one moment (linux: /proc/net/tcp and tcp6 of the
// caller's network namespace).
type PortSnapshot struct {
	// TimeWait counts the sockets in TIME_WAIT towards the endpoint.
	TimeWait int `json:"time_wait"`
	// InUse counts the sockets in any state towards the endpoint holding
	// a port of the ephemeral range.
	InUse int `json:"in_use"`
	// RangeSize is the number of ports in the range
	// (net.ipv4.ip_local_port_range).
	RangeSize int `json:"range_size"`
	// Share is InUse / RangeSize.
	Share float64 `json:"share"`
	// Reusable counts the TIME_WAIT sockets among InUse whose ports a new
	// connect may take over (net.ipv4.tcp_tw_reuse 1, or 2, linux's
	// default, towards a loopback address): on loopback their count
	// levels off near half the range without slowing connects.
	Reusable int `json:"reusable"`
	// Blocked is (InUse - Reusable) / RangeSize: the share a new connect
	// has to search past.
	Blocked float64 `json:"blocked"`
}

// PortUsage is a connect-per-operation run's debris: each operation leaves
// a socket in TIME_WAIT on the client host for 60 s, and the kernel's
// search for a free port slows every connect as they fill the range, so
// that one run's debris can decide the next run's numbers. Sockets count
// towards the endpoint's address and port (its port alone when the address
// is a name; the seed node's only in cluster mode).
type PortUsage struct {
	Before PortSnapshot `json:"before"`
	After  PortSnapshot `json:"after"`
	// LimitedBy is LimitedByPorts when at least 40% of the range was
	// blocked towards the endpoint (PortSnapshot.Blocked) when the run
	// started, or 90% when it ended; empty otherwise.
	LimitedBy string `json:"limited_by,omitempty"`
}

// readPorts snapshots the ports towards addr; nil when they cannot be read
// (not linux, no /proc).
func readPorts(addr string) *ports.Snapshot {
	e, ok := ports.ParseEndpoint(addr)
	if !ok {
		return nil
	}
	s, err := ports.Read(e)
	if err != nil {
		return nil
	}
	return s
}

func portSnapshot(s *ports.Snapshot) PortSnapshot {
	return PortSnapshot{TimeWait: s.TimeWait, InUse: s.InUse, RangeSize: s.RangeHi - s.RangeLo + 1, Share: s.Share(),
		Reusable: s.Reusable, Blocked: s.Blocked()}
}

// newPortUsage is the usage between two snapshots; nil when either is.
func newPortUsage(before, after *ports.Snapshot) *PortUsage {
	if before == nil || after == nil {
		return nil
	}
	u := &PortUsage{Before: portSnapshot(before), After: portSnapshot(after)}
	if u.Before.Blocked >= portsLimitedBefore || u.After.Blocked >= portsLimitedAfter {
		u.LimitedBy = LimitedByPorts
	}
	return u
}

// portWatch takes a connect-per-operation run's snapshots.
type portWatch struct {
	addr   string
	before *ports.Snapshot
}

// watchPorts takes the first snapshot of a connect-per-operation run
// against addr.
func watchPorts(addr string) *portWatch {
	return &portWatch{addr: addr, before: readPorts(addr)}
}

// done takes the second snapshot into r.Ports.
func (p *portWatch) done(r *RunResult) {
	if p == nil || r == nil {
		return
	}
	r.Ports = newPortUsage(p.before, readPorts(p.addr))
}
