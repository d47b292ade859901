package pathlab

import (
	"context"
	"net/netip"
	"os/exec"
	"strconv"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// BridgeConfig says how to build a Bridge.
type BridgeConfig struct {
	// Prefix starts every namespace's name: the hub is Prefix+"h", member i
	// is Prefix+"a"+i. The caller makes it unique (a random suffix), and a
	// test's namespaces then say whose they are.
	Prefix string
	// Net is the members' IPv4 /24, inside 198.18.0.0/15: member i holds
	// its host number i+1, the hub's bridge 254.
	Net netip.Prefix
	// Members is how many member namespaces hang off the bridge, 1 to 253.
	Members int
}

// Bridge is a star of namespaces, as hosts on one subnet: each member has
// an "eth0" veth whose peer is a port of the bridge "br0" in the hub
// namespace, and a default route through the hub. Nothing is added to the
// host's own network namespace.
type Bridge struct {
	// Hub holds the bridge: its Dev is "br0" and Addr the bridge's address
	// (each member's gateway).
	Hub *Host
	// Members are the member hosts, in order; each one's Peer is the hub.
	Members []*Host
}

// NewBridge builds a bridge and registers its teardown (deleting the
// namespaces removes every device in them) with tb.Cleanup. It skips (or,
// with NETPERFKIT_REQUIRE_PEERS=1, fails) tb without linux, root or ip.
func NewBridge(tb testing.TB, cfg BridgeConfig) *Bridge {
	tb.Helper()
	if !cfg.Net.Addr().Is4() || cfg.Net.Bits() != 24 || cfg.Members < 1 || cfg.Members > 253 || cfg.Prefix == "" {
		tb.Fatalf("pathlab: BridgeConfig %+v: want a Prefix, an IPv4 /24 and 1-253 members", cfg)
		return nil
	}
	peertest.Root(tb)
	ip := peertest.Binary(tb, "apt-get install iproute2", "ip")
	tc := peertest.Binary(tb, "apt-get install iproute2", "tc")
	if tb.Skipped() || tb.Failed() {
		return nil
	}
	base := cfg.Net.Masked().Addr().As4()
	host := func(n byte) netip.Addr { a := base; a[3] = n; return netip.AddrFrom4(a) }
	hub := &Host{Netns: cfg.Prefix + "h", Dev: "br0", Addr: host(254), ip: ip, tc: tc}
	b := &Bridge{Hub: hub}
	addNetns(tb, ip, hub.Netns)
	mustRun(tb, ip, "-n", hub.Netns, "link", "set", "lo", "up")
	mustRun(tb, ip, "-n", hub.Netns, "link", "add", "br0", "type", "bridge")
	mustRun(tb, ip, "-n", hub.Netns, "addr", "add", hub.Addr.String()+"/24", "dev", "br0")
	mustRun(tb, ip, "-n", hub.Netns, "link", "set", "br0", "up")
	for i := range cfg.Members {
		m := &Host{Netns: cfg.Prefix + "a" + strconv.Itoa(i), Dev: "eth0", Addr: host(byte(i + 1)), Peer: hub.Addr, ip: ip, tc: tc}
		addNetns(tb, ip, m.Netns)
		port := "b" + strconv.Itoa(i)
		mustRun(tb, ip, "-n", m.Netns, "link", "add", m.Dev, "type", "veth", "peer", "name", port, "netns", hub.Netns)
		mustRun(tb, ip, "-n", hub.Netns, "link", "set", port, "master", "br0", "up")
		mustRun(tb, ip, "-n", m.Netns, "link", "set", "lo", "up")
		mustRun(tb, ip, "-n", m.Netns, "addr", "add", m.Addr.String()+"/24", "dev", m.Dev)
		mustRun(tb, ip, "-n", m.Netns, "link", "set", m.Dev, "up")
		// A program that looks for its default-route interface finds eth0.
		mustRun(tb, ip, "-n", m.Netns, "route", "add", "default", "via", hub.Addr.String())
		b.Members = append(b.Members, m)
	}
	return b
}

// addNetns creates a namespace and registers its deletion.
func addNetns(tb testing.TB, ip, name string) {
	tb.Helper()
	mustRun(tb, ip, "netns", "add", name)
	tb.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("pathlab: ip netns del %s: %v: %s", name, err, out)
		}
	})
}

// Start starts name inside h's namespace and returns its combined output,
// which grows while it runs. The process is killed when the test ends, and
// its output logged if the test failed. It fails tb when the process does
// not start.
func (h *Host) Start(tb testing.TB, name string, args ...string) *peertest.Buffer {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := h.Command(ctx, name, args...)
	var out peertest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("pathlab: %s in %s: %v", name, h.Netns, err)
		return &out
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("%s in %s:\n%s", name, h.Netns, out.String())
		}
	})
	return &out
}
