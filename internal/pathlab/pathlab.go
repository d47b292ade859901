package pathlab

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// Qdisc kinds a Shaper installs: the ones the CI machines have (no netem,
// no classifiers).
const (
	TBF = "tbf"
	HTB = "htb"
)

// Defaults of a Shaper's zero fields: the path of issue 24, where a
// 256 KiB bucket lets a 64 KiB GSO or TSO write through whole and 20 ms of
// queue is what a cloud host's shaper commonly holds.
const (
	DefaultBurst   = 256 << 10
	DefaultLatency = 20 * time.Millisecond
)

// Shaper limits one end's egress to Rate.
type Shaper struct {
	// Qdisc is TBF or HTB; empty means TBF.
	Qdisc string
	// Rate is the shaped rate in bits per second; it must be positive.
	Rate float64
	// Burst is the token bucket in bytes; 0 means DefaultBurst.
	Burst int
	// Latency is how long a packet may wait in tbf's queue before it is
	// dropped (tbf's latency; htb's leaf queue is pfifo of the device's
	// txqueuelen); 0 means DefaultLatency.
	Latency time.Duration
}

// Config says how to shape the path; a nil Config is an unshaped path.
type Config struct {
	// A and B shape the egress of the A and B ends; nil leaves that end
	// unshaped.
	A, B *Shaper
	// Router puts a third namespace, Lab.M, between A and B: A's veth
	// leads to M's "veth0", M's "veth1" to B's, each pair on its own /30,
	// and M forwards. A test can then drop on the path's middle hop (an
	// nft rule in M) where neither end counts it.
	Router bool
	// Prefix starts the namespaces' names ("npk-lab" when empty), so a
	// test's namespaces say whose they are.
	Prefix string
}

// Lab is a path between two hosts, each a network namespace.
type Lab struct {
	A, B *Host
	// M is the middle hop when Config.Router is set, else nil. Its Dev is
	// the veth towards A; its Addr is its address on A's side, Peer is A.
	M *Host
}

// Host is one end of the path.
type Host struct {
	// Netns is the namespace's name (ip netns), and NetnsPath its file.
	Netns string
	// Dev is the veth end's name inside the namespace.
	Dev string
	// Addr is this end's address; Peer the other end's.
	Addr, Peer netip.Addr
	// Shaper is the shaping on Dev's egress, nil when none.
	Shaper *Shaper

	ip, tc string
}

// labs numbers the labs of one test process, so namespaces of parallel
// tests and of concurrent test processes (the pid) never collide.
var labs atomic.Uint32

// New builds a lab and registers its teardown with tb.Cleanup. It skips
// (or, with NETPERFKIT_REQUIRE_PEERS=1, fails) tb without linux, root, ip
// or tc, or when a qdisc asked for is not available.
func New(tb testing.TB, cfg *Config) *Lab {
	tb.Helper()
	if cfg == nil {
		cfg = &Config{}
	}
	for _, s := range []*Shaper{cfg.A, cfg.B} {
		if err := s.validate(); err != nil {
			tb.Fatalf("%v", err)
		}
	}
	peertest.Root(tb)
	ip := peertest.Binary(tb, "apt-get install iproute2", "ip")
	tc := peertest.Binary(tb, "apt-get install iproute2", "tc")
	if tb.Skipped() || tb.Failed() {
		return nil
	}
	n := labs.Add(1)
	base := subnet(n)
	id := strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(int(n))
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "npk-lab"
	}
	l := &Lab{
		A: &Host{Netns: prefix + "-" + id + "-a", Dev: "veth0", Addr: base, Peer: base.Next(), Shaper: cfg.A, ip: ip, tc: tc},
		B: &Host{Netns: prefix + "-" + id + "-b", Dev: "veth0", Addr: base.Next(), Peer: base, Shaper: cfg.B, ip: ip, tc: tc},
	}
	if cfg.Router {
		return l.routed(tb, prefix+"-"+id+"-m")
	}
	for _, h := range []*Host{l.A, l.B} {
		addNetns(tb, ip, h.Netns)
	}
	mustRun(tb, ip, "link", "add", "name", l.A.Dev, "netns", l.A.Netns, "type", "veth",
		"peer", "name", l.B.Dev, "netns", l.B.Netns)
	for _, h := range []*Host{l.A, l.B} {
		mustRun(tb, ip, "-n", h.Netns, "addr", "add", h.Addr.String()+"/30", "dev", h.Dev)
		mustRun(tb, ip, "-n", h.Netns, "link", "set", h.Dev, "up")
		mustRun(tb, ip, "-n", h.Netns, "link", "set", "lo", "up")
		if h.Shaper != nil && !h.shape(tb) {
			return nil
		}
	}
	return l
}

// subnet is the first address of the lab's /30: two /30-sized halves of
// 198.18.0.0/15, one per lab number of this process.
func subnet(n uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18 + byte(n>>14&1), byte(n >> 6), byte(n<<2) | 1})
}

// routed builds A - M - B: A and M share l's /30, M and B another lab
// number's, and each end routes the other's through M.
func (l *Lab) routed(tb testing.TB, mName string) *Lab {
	tb.Helper()
	b2 := subnet(labs.Add(1))
	l.M = &Host{Netns: mName, Dev: "veth0", Addr: l.A.Peer, Peer: l.A.Addr, ip: l.A.ip, tc: l.A.tc}
	l.B.Addr, l.B.Peer = b2.Next(), b2
	for _, h := range []*Host{l.A, l.M, l.B} {
		addNetns(tb, h.ip, h.Netns)
	}
	ip := l.A.ip
	mustRun(tb, ip, "link", "add", "name", "veth0", "netns", l.A.Netns, "type", "veth", "peer", "name", "veth0", "netns", l.M.Netns)
	mustRun(tb, ip, "link", "add", "name", "veth1", "netns", l.M.Netns, "type", "veth", "peer", "name", "veth0", "netns", l.B.Netns)
	for _, a := range [][3]string{{l.A.Netns, "veth0", l.A.Addr.String()}, {l.M.Netns, "veth0", l.M.Addr.String()},
		{l.M.Netns, "veth1", b2.String()}, {l.B.Netns, "veth0", l.B.Addr.String()}} {
		mustRun(tb, ip, "-n", a[0], "addr", "add", a[2]+"/30", "dev", a[1])
		mustRun(tb, ip, "-n", a[0], "link", "set", a[1], "up")
	}
	for _, h := range []*Host{l.A, l.M, l.B} {
		mustRun(tb, ip, "-n", h.Netns, "link", "set", "lo", "up")
	}
	mustRun(tb, ip, "netns", "exec", l.M.Netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	net30 := func(a netip.Addr) string { return netip.PrefixFrom(a, 30).Masked().String() }
	mustRun(tb, ip, "-n", l.A.Netns, "route", "add", net30(b2), "via", l.M.Addr.String())
	mustRun(tb, ip, "-n", l.B.Netns, "route", "add", net30(l.A.Addr), "via", b2.String())
	// Each end's Peer is the other end, as in a two-host lab.
	l.A.Peer, l.B.Peer = l.B.Addr, l.A.Addr
	for _, h := range []*Host{l.A, l.B} {
		if h.Shaper != nil && !h.shape(tb) {
			return nil
		}
	}
	return l
}

func (s *Shaper) validate() error {
	switch {
	case s == nil:
		return nil
	case s.Qdisc != "" && s.Qdisc != TBF && s.Qdisc != HTB:
		return fmt.Errorf("pathlab: Shaper.Qdisc %q: want %q or %q", s.Qdisc, TBF, HTB)
	case !(s.Rate > 0):
		return fmt.Errorf("pathlab: Shaper.Rate %v: must be positive", s.Rate)
	case s.Burst < 0 || s.Latency < 0:
		return fmt.Errorf("pathlab: Shaper.Burst %d or Latency %v is negative", s.Burst, s.Latency)
	}
	return nil
}

// shape installs h.Shaper on h.Dev, or skips tb with tc's reason.
func (h *Host) shape(tb testing.TB) bool {
	tb.Helper()
	s := *h.Shaper
	if s.Burst == 0 {
		s.Burst = DefaultBurst
	}
	if s.Latency == 0 {
		s.Latency = DefaultLatency
	}
	rate := strconv.FormatFloat(s.Rate, 'f', 0, 64) + "bit"
	burst := strconv.Itoa(s.Burst) + "b"
	var cmds [][]string
	if s.Qdisc == HTB {
		cmds = [][]string{
			{"qdisc", "add", "dev", h.Dev, "root", "handle", "1:", "htb", "default", "1"},
			{"class", "add", "dev", h.Dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "burst", burst, "cburst", burst},
		}
	} else {
		lat := strconv.FormatInt(s.Latency.Microseconds(), 10) + "us"
		cmds = [][]string{{"qdisc", "add", "dev", h.Dev, "root", "tbf", "rate", rate, "burst", burst, "latency", lat}}
	}
	for _, c := range cmds {
		if out, err := exec.Command(h.tc, append([]string{"-n", h.Netns}, c...)...).CombinedOutput(); err != nil {
			peertest.Missing(tb, fmt.Sprintf("tc %v: %v: %s", c, err, bytes.TrimSpace(out)),
				"a kernel with the "+c[len(c)-4]+" qdisc")
			return false
		}
	}
	return true
}

// Command returns a command that runs name inside h's namespace (ip netns
// exec), bound to ctx as exec.CommandContext.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, h.ip, append([]string{"netns", "exec", h.Netns, name}, args...)...)
}

// Run runs name inside h's namespace and returns its standard output; it
// fails tb when the command fails.
func (h *Host) Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	var stderr bytes.Buffer
	cmd := h.Command(context.Background(), name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("pathlab: %s %v in %s: %v: %s", name, args, h.Netns, err, stderr.Bytes())
	}
	return string(out)
}

// NetnsPath is the file that names h's namespace (for setns).
func (h *Host) NetnsPath() string { return "/run/netns/" + h.Netns }

func mustRun(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("pathlab: %s %v: %v: %s", name, args, err, out)
	}
}
