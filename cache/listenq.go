package cache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// The listen queue (issue 43). A server whose accept queue is full drops
// the SYNs it cannot queue, and the client's kernel sends them again after
// its initial retransmission timeout, 1 s, exactly as if the network had
// lost them: from the client alone the two cannot be told apart. The
// server's kernel counts each drop (TcpExtListenDrops in /proc/net/netstat,
// per network namespace). When the endpoint is local, an address of this
// network namespace (loopback, or an address of one of its interfaces), the
// server's listener is in the namespace whose counters this process reads,
// and a run reads ListenDrops before and after: that many of its SYNs sent
// again are the listen queue's, not the network's. A remote endpoint's
// counters are out of reach, and its syn_retransmit includes a full listen
// queue.

// netstatPath is the TcpExt counters of the process's network namespace.
const netstatPath = "/proc/self/net/netstat"

// listenWatch is ListenDrops read before a run whose endpoint is local.
type listenWatch struct {
	before int64
	read   func() (int64, error) // a seam for tests
}

// watchListen reads ListenDrops before a run on addr, when addr is local
// and the counter can be read; nil otherwise.
func watchListen(addr string) *listenWatch {
	if !isLocalAddr(addr, net.InterfaceAddrs) {
		return nil
	}
	return startListenWatch(readListenDrops)
}

func startListenWatch(read func() (int64, error)) *listenWatch {
	n, err := read()
	if err != nil {
		return nil
	}
	return &listenWatch{before: n, read: read}
}

// delta is how much ListenDrops rose since the watch began; false when it
// cannot be read again (or went back).
func (w *listenWatch) delta() (int64, bool) {
	if w == nil {
		return 0, false
	}
	n, err := w.read()
	if err != nil || n < w.before {
		return 0, false
	}
	return n - w.before, true
}

// isLocalAddr reports whether host:port addr names this network
// namespace: "localhost" (and names under it), a loopback or unspecified
// address, or an address of one of its interfaces (ifAddrs). Other names
// are not looked up (a lookup would add a query to the run) and count as
// remote.
func isLocalAddr(addr string, ifAddrs func() ([]net.Addr, error)) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.WithZone("").Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	as, err := ifAddrs()
	if err != nil {
		return false
	}
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}

// readListenDrops reads ListenDrops of the process's network namespace.
func readListenDrops() (int64, error) {
	f, err := os.Open(netstatPath)
	if err != nil {
		return 0, fmt.Errorf("cache: listen drops: %w", err)
	}
	defer f.Close()
	return parseListenDrops(f)
}

var errNoListenDrops = errors.New("cache: no TcpExt ListenDrops in netstat")

// parseListenDrops reads TcpExt's ListenDrops from /proc/net/netstat's
// text: pairs of lines, names then values, each starting with its group
// ("TcpExt:").
func parseListenDrops(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), 1<<20)
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TcpExt:" {
			names = nil
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, name := range names {
			if name == "ListenDrops" && i < len(f) {
				n, err := strconv.ParseInt(f[i], 10, 64)
				if err != nil || n < 0 {
					return 0, fmt.Errorf("cache: ListenDrops %q: %w", f[i], errNoListenDrops)
				}
				return n, nil
			}
		}
		names = nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("cache: netstat: %w", err)
	}
	return 0, errNoListenDrops
}
