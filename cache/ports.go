package cache

import (
	"encoding/json"

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

// PortUsage is a connect-per-operation run's debris: each operation leaves
// a socket in TIME_WAIT on the client host for 60 s, and the kernel's
// search for a free port slows every connect as they fill the range, so
// that one run's debris can decide the next run's numbers. Sockets count
// towards the endpoint's address and port (its port alone when the address
// is a name; the seed node's only in cluster mode), read from /proc/net/tcp
// and tcp6 of the caller's network namespace (linux) when the run starts
// and when it ends.
//
// In JSON it is {"before": {...}, "after": {...}, "limited_by"}, each
// snapshot with time_wait, in_use (sockets towards the endpoint holding a
// port of the ephemeral range), range_size (net.ipv4.ip_local_port_range),
// share (in_use / range_size), reusable (TIME_WAIT sockets whose ports a
// new connect may take over: net.ipv4.tcp_tw_reuse 1, or 2, linux's
// default, towards a loopback address, where their count levels off near
// half the range without slowing connects) and blocked.
type PortUsage struct {
	// TimeWaitBefore and TimeWaitAfter count the sockets in TIME_WAIT
	// towards the endpoint.
	TimeWaitBefore, TimeWaitAfter int
	// BlockedBefore and BlockedAfter are the shares of the ephemeral port
	// range a new connect has to search past: the sockets towards the
	// endpoint holding a port of the range, less those whose ports it may
	// take over, over the range's size.
	BlockedBefore, BlockedAfter float64
	// LimitedBy is LimitedByPorts when at least 40% of the range was
	// blocked towards the endpoint when the run started, or 90% when it
	// ended; empty otherwise.
	LimitedBy string
	// before and after are the snapshots in full, for JSON.
	before, after portSnapshot
}

// portSnapshot is one reading of the ports, as JSON has it.
type portSnapshot struct {
	TimeWait  int     `json:"time_wait"`
	InUse     int     `json:"in_use"`
	RangeSize int     `json:"range_size"`
	Share     float64 `json:"share"`
	Reusable  int     `json:"reusable"`
	Blocked   float64 `json:"blocked"`
}

// portUsageJSON is PortUsage's wire form.
type portUsageJSON struct {
	Before    portSnapshot `json:"before"`
	After     portSnapshot `json:"after"`
	LimitedBy string       `json:"limited_by,omitempty"`
}

// MarshalJSON writes the snapshots in full (see PortUsage).
func (u PortUsage) MarshalJSON() ([]byte, error) {
	b, a := u.before, u.after
	b.TimeWait, b.Blocked, a.TimeWait, a.Blocked = u.TimeWaitBefore, u.BlockedBefore, u.TimeWaitAfter, u.BlockedAfter
	return json.Marshal(portUsageJSON{Before: b, After: a, LimitedBy: u.LimitedBy})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (u *PortUsage) UnmarshalJSON(data []byte) error {
	var w portUsageJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*u = PortUsage{TimeWaitBefore: w.Before.TimeWait, TimeWaitAfter: w.After.TimeWait, BlockedBefore: w.Before.Blocked,
		BlockedAfter: w.After.Blocked, LimitedBy: w.LimitedBy, before: w.Before, after: w.After}
	return nil
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

func newPortSnapshot(s *ports.Snapshot) portSnapshot {
	return portSnapshot{TimeWait: s.TimeWait, InUse: s.InUse, RangeSize: s.RangeHi - s.RangeLo + 1, Share: s.Share(),
		Reusable: s.Reusable, Blocked: s.Blocked()}
}

// newPortUsage is the usage between two snapshots; nil when either is.
func newPortUsage(before, after *ports.Snapshot) *PortUsage {
	if before == nil || after == nil {
		return nil
	}
	b, a := newPortSnapshot(before), newPortSnapshot(after)
	u := &PortUsage{TimeWaitBefore: b.TimeWait, TimeWaitAfter: a.TimeWait, BlockedBefore: b.Blocked, BlockedAfter: a.Blocked,
		before: b, after: a}
	if u.BlockedBefore >= portsLimitedBefore || u.BlockedAfter >= portsLimitedAfter {
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
