// Package ports reads how much of the client host's ephemeral TCP port range
// the sockets towards one endpoint hold, and how many of them are in
// TIME_WAIT (issue 31): a connect-per-operation run leaves one TIME_WAIT
// socket per operation for 60 s, and once they fill much of the range the
// kernel's search for a free port, not the client or the server, sets the
// cost of a connect. Linux only (/proc/net/tcp, /proc/net/tcp6 and
// /proc/sys/net/ipv4/ip_local_port_range of the caller's network
// namespace); elsewhere Read returns an error wrapping errors.ErrUnsupported.
package ports

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Snapshot is the use of the ephemeral port range towards one endpoint at
// one moment.
type Snapshot struct {
	// TimeWait counts the sockets in TIME_WAIT towards the endpoint.
	TimeWait int `json:"time_wait"`
	// InUse counts the sockets in any state towards the endpoint whose
	// local port is in the ephemeral range: towards one address and port,
	// every one of them holds a port of the range.
	InUse int `json:"in_use"`
	// RangeLo and RangeHi are the ephemeral range (ip_local_port_range).
	RangeLo int `json:"range_lo"`
	RangeHi int `json:"range_hi"`
	// Reusable counts the TIME_WAIT sockets among InUse whose ports a new
	// connect may take over: all of them when net.ipv4.tcp_tw_reuse is 1,
	// or 2 (linux's default) and the endpoint is on loopback; none
	// otherwise. On loopback the TIME_WAIT count therefore levels off near
	// half the range (connect prefers even ports) without slowing
	// connects.
	Reusable int `json:"reusable"`
}

// Blocked is the share of the range that sockets towards the endpoint hold
// and a new connect cannot take: (InUse - Reusable) over the range's size.
func (s *Snapshot) Blocked() float64 {
	if s == nil || s.RangeHi < s.RangeLo || s.RangeLo <= 0 {
		return 0
	}
	return float64(s.InUse-s.Reusable) / float64(s.RangeHi-s.RangeLo+1)
}

// reuses reports whether tcp_tw_reuse value v lets connects to e take over
// TIME_WAIT ports.
func (e *Endpoint) reuses(v int) bool {
	if v == 1 {
		return true
	}
	if v != 2 || len(e.Addrs) == 0 {
		return false
	}
	for _, a := range e.Addrs {
		if !a.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// Share is InUse over the range's size (0 when the range is unknown).
func (s *Snapshot) Share() float64 {
	if s == nil || s.RangeHi < s.RangeLo || s.RangeLo <= 0 {
		return 0
	}
	return float64(s.InUse) / float64(s.RangeHi-s.RangeLo+1)
}

// Endpoint selects the sockets of a snapshot: those whose remote port is
// Port and, when Addrs is not empty, whose remote address is one of Addrs
// (IPv4 addresses also match their IPv4-mapped IPv6 form).
type Endpoint struct {
	Port  uint16
	Addrs []netip.Addr
}

func (e *Endpoint) match(a netip.AddrPort) bool {
	if a.Port() != e.Port {
		return false
	}
	if len(e.Addrs) == 0 {
		return true
	}
	for _, x := range e.Addrs {
		if x.Unmap() == a.Addr().Unmap() {
			return true
		}
	}
	return false
}

// errParse marks malformed input.
var errParse = errors.New("ports: malformed")

// tcpTimeWait is the st column's value for TIME_WAIT (include/net/tcp_states.h).
const tcpTimeWait = 0x06

// parseTCP adds the sockets of r, in /proc/net/tcp or tcp6's format, that
// go to e to s. Lines it cannot read are errors: the format has not changed
// since Linux 2.6, so a line that does not fit means the wrong file.
// reuse says whether TIME_WAIT ports can be taken over (Snapshot.Reusable).
func parseTCP(r io.Reader, e *Endpoint, s *Snapshot, reuse bool) error {
	sc := bufio.NewScanner(r)
	// /proc/net/tcp answers a read with the whole lines that fit: after a
	// connect-per-operation run it lists ~14,000 sockets (2 MB), which a
	// small buffer reads in thousands of system calls.
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		if first {
			first = false
			if bytes.Contains(line, []byte("local_address")) {
				continue // the header
			}
		}
		var f [4][]byte
		n := fields(line, &f)
		if n == 0 {
			continue
		}
		if n < 4 {
			return fmt.Errorf("%w line in /proc/net/tcp: %d fields", errParse, n)
		}
		local, err := parseAddr(f[1])
		if err != nil {
			return err
		}
		remote, err := parseAddr(f[2])
		if err != nil {
			return err
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			return fmt.Errorf("%w state %q: %w", errParse, f[3], err)
		}
		if !e.match(remote) {
			continue
		}
		inRange := int(local.Port()) >= s.RangeLo && int(local.Port()) <= s.RangeHi
		if st == tcpTimeWait {
			s.TimeWait++
			if inRange && reuse {
				s.Reusable++
			}
		}
		if inRange {
			s.InUse++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %w", errParse, err)
	}
	return nil
}

// fields puts the first len(f) space-separated fields of line in f without
// allocating (a host in a connection storm lists tens of thousands of
// sockets) and returns how many it found.
func fields(line []byte, f *[4][]byte) int {
	n := 0
	for n < len(f) {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			break
		}
		end := bytes.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		f[n], line = line[:end], line[end:]
		n++
	}
	return n
}

// parseAddr reads "0100007F:18EB": the address as the kernel's 32-bit words
// in host byte order (little-endian here: see hostWord), the port in hex.
func parseAddr(b []byte) (netip.AddrPort, error) {
	i := bytes.IndexByte(b, ':')
	if i < 0 || (i != 8 && i != 32) {
		return netip.AddrPort{}, fmt.Errorf("%w address %q", errParse, b)
	}
	port, err := strconv.ParseUint(string(b[i+1:]), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w port in %q: %w", errParse, b, err)
	}
	var raw [16]byte
	n, err := hex.Decode(raw[:], b[:i])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w address %q: %w", errParse, b, err)
	}
	for w := 0; w < n; w += 4 {
		hostWord(raw[w : w+4])
	}
	var a netip.Addr
	if n == 4 {
		a = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		a = netip.AddrFrom16(raw)
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// hostWord turns one 32-bit word as /proc prints it (the value in host
// order, printed as hex) into network order, on the little-endian hosts
// netperfkit runs on (amd64, arm64).
func hostWord(w []byte) {
	w[0], w[1], w[2], w[3] = w[3], w[2], w[1], w[0]
}

// ParseEndpoint is the selector of addr (host:port): its port, and its
// address when host is an IP literal (a name matches by port alone).
func ParseEndpoint(addr string) (*Endpoint, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, false
	}
	e := &Endpoint{Port: uint16(pn)}
	if a, err := netip.ParseAddr(host); err == nil {
		e.Addrs = []netip.Addr{a}
	}
	return e, true
}

// settlePoll is how often Settle looks.
const settlePoll = 500 * time.Millisecond

// Settle waits until at most share of the ephemeral range is blocked
// towards e (Snapshot.Blocked), for at most max, and returns how long it waited. It returns at once
// when the ports cannot be read, and ctx's error when ctx ends first.
func Settle(ctx context.Context, e *Endpoint, share float64, max time.Duration) (time.Duration, error) {
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		if ctx.Err() != nil {
			return time.Since(start), fmt.Errorf("ports: %w", ctx.Err())
		}
		s, err := Read(e)
		waited := time.Since(start)
		if err != nil || s.Blocked() <= share || waited >= max {
			return waited, nil
		}
		t.Reset(min(settlePoll, max-waited))
	}
}
