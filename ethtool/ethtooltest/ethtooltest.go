// Package ethtooltest creates veth pairs in private network namespaces for
// tests that read real driver statistics, like net/http/httptest does for
// servers. It needs root on linux; without it the test is skipped, or failed
// when NETPERFKIT_REQUIRE_PEERS=1.
package ethtooltest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// Veth is a veth pair whose two ends live in two network namespaces created
// for one test and deleted by its cleanup. Both ends are up and addressed
// (198.19.231.1/30 on Name, 198.19.231.2/30 on PeerName: RFC 2544's
// benchmarking range) so traffic can flow. The ifindex of the peer end,
// which veth reports as its peer_ifindex statistic, is PeerIndex.
type Veth struct {
	// Name is the end under test, in the namespace of NetnsPath.
	Name string
	// PeerName is the other end, in the namespace of PeerNetnsPath.
	PeerName string
	// Addr and PeerAddr are the IPv4 addresses of the two ends.
	Addr, PeerAddr string

	ns, peerNS string // namespace names
	ip         string
}

// NewVeth creates the namespaces and the pair, and registers their removal
// with tb.Cleanup. A nil tb creates nothing and returns nil.
func NewVeth(tb testing.TB) *Veth {
	if tb == nil {
		return nil
	}
	tb.Helper()
	peertest.Root(tb)
	ip := peertest.Binary(tb, "apt-get install iproute2", "ip")
	id := randomID(tb)
	v := &Veth{
		ns: "npk-" + id + "-a", peerNS: "npk-" + id + "-b",
		Name: "npk" + id + "a", PeerName: "npk" + id + "b",
		Addr: "198.19.231.1", PeerAddr: "198.19.231.2",
		ip: ip,
	}
	addNetns(tb, ip, v.ns)
	addNetns(tb, ip, v.peerNS)
	run(tb, ip, "link", "add", v.Name, "netns", v.ns, "type", "veth", "peer", "name", v.PeerName, "netns", v.peerNS)
	run(tb, ip, "-n", v.ns, "addr", "add", v.Addr+"/30", "dev", v.Name)
	run(tb, ip, "-n", v.peerNS, "addr", "add", v.PeerAddr+"/30", "dev", v.PeerName)
	for _, args := range [][]string{
		{"-n", v.ns, "link", "set", v.Name, "up"}, {"-n", v.ns, "link", "set", "lo", "up"},
		{"-n", v.peerNS, "link", "set", v.PeerName, "up"}, {"-n", v.peerNS, "link", "set", "lo", "up"},
	} {
		run(tb, ip, args...)
	}
	return v
}

// Exec runs a command inside Name's namespace (ip netns exec) and returns its standard
// output; a failure fails the test. A nil v or tb runs nothing and returns nil.
func (v *Veth) Exec(tb testing.TB, name string, args ...string) []byte {
	if v == nil || tb == nil {
		return nil
	}
	tb.Helper()
	return run(tb, v.ip, append([]string{"netns", "exec", v.ns, name}, args...)...)
}

// PeerIndex is the ifindex of PeerName in its namespace, which veth
// reports as Name's peer_ifindex statistic; a failure fails the test. A
// nil v or tb, or a zero Veth, reads nothing and returns 0.
func (v *Veth) PeerIndex(tb testing.TB) int {
	if v == nil || tb == nil || v.peerNS == "" {
		return 0
	}
	tb.Helper()
	var idx int
	if err := InNetns(v.PeerNetnsPath(), func() error {
		ifi, err := net.InterfaceByName(v.PeerName)
		if err == nil {
			idx = ifi.Index
		}
		return err
	}); err != nil {
		tb.Fatalf("ethtooltest: %s's index: %v", v.PeerName, err)
	}
	return idx
}

// NetnsPath is the file that names Name's namespace for setns(2); "" for a
// nil or zero Veth.
func (v *Veth) NetnsPath() string { return netnsPath(v, func(v *Veth) string { return v.ns }) }

// PeerNetnsPath is the file that names PeerName's namespace for setns(2);
// "" for a nil or zero Veth.
func (v *Veth) PeerNetnsPath() string { return netnsPath(v, func(v *Veth) string { return v.peerNS }) }

func netnsPath(v *Veth, ns func(*Veth) string) string {
	if v == nil || ns(v) == "" {
		return ""
	}
	return "/run/netns/" + ns(v)
}

// addNetns creates network namespace ns and registers its removal.
func addNetns(tb testing.TB, ip, ns string) {
	tb.Helper()
	run(tb, ip, "netns", "add", ns)
	tb.Cleanup(func() { _ = exec.Command(ip, "netns", "del", ns).Run() })
}

// run runs a command and returns its standard output; a failure fails the test.
func run(tb testing.TB, name string, args ...string) []byte {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("ethtooltest: %s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

func randomID(tb testing.TB) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("ethtooltest: %v", err)
	}
	return hex.EncodeToString(b[:])[:7]
}
