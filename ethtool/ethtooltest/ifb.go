package ethtooltest

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// NewIFB returns an ifb device, Name, in a private network namespace,
// NetnsPath, that counts in its rx_queue_0_packets and rx_queue_0_bytes
// statistics every packet received on that namespace's loopback: lo's
// ingress is redirected to it with a tc u32 filter. Unlike veth, whose
// statistics stay 0 for plain traffic, it gives a test counters that really
// move (see Veth.SendUDP). It has no peer: PeerName, PeerAddr and
// PeerNetnsPath are empty. NewIFB creates the namespace, the device and the
// redirect, and registers their removal with tb.Cleanup. It needs root, ip
// and tc. A nil tb creates nothing and returns nil.
func NewIFB(tb testing.TB) *Veth {
	if tb == nil {
		return nil
	}
	tb.Helper()
	peertest.Root(tb)
	ip := peertest.Binary(tb, "apt-get install iproute2", "ip")
	tc := peertest.Binary(tb, "apt-get install iproute2", "tc")
	id := randomID(tb)
	f := &Veth{ns: "npk-" + id + "-i", Name: "npk" + id + "i", ip: ip}
	addNetns(tb, ip, f.ns)
	if out, err := exec.Command(ip, "-n", f.ns, "link", "add", f.Name, "type", "ifb").CombinedOutput(); err != nil {
		peertest.Missing(tb, "the kernel cannot create an ifb device: "+strings.TrimSpace(string(out)), "modprobe ifb")
		return nil
	}
	run(tb, ip, "-n", f.ns, "link", "set", f.Name, "up")
	run(tb, ip, "-n", f.ns, "link", "set", "lo", "up")
	run(tb, ip, "netns", "exec", f.ns, tc, "qdisc", "add", "dev", "lo", "ingress")
	if out, err := exec.Command(ip, "netns", "exec", f.ns, tc, "filter", "add", "dev", "lo", "parent", "ffff:", "protocol", "all",
		"u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", f.Name).CombinedOutput(); err != nil {
		peertest.Missing(tb, "tc cannot redirect lo to the ifb device: "+strings.TrimSpace(string(out)), "modprobe cls_u32 act_mirred")
		return nil
	}
	return f
}

// SendUDP sends n datagrams of size bytes over the loopback of Name's
// namespace to a socket bound there, so each one is received once on lo
// and, for a device from NewIFB, counted once by the ifb device. A nil tb
// sends nothing; a negative n or size, or a nil or zero f, fails the test.
func (f *Veth) SendUDP(tb testing.TB, n, size int) {
	if tb == nil {
		return
	}
	tb.Helper()
	if n < 0 || size < 0 {
		tb.Fatalf("ethtooltest: SendUDP: n and size must not be negative, got %d and %d", n, size)
		return
	}
	err := InNetns(f.NetnsPath(), func() error {
		rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		defer rx.Close()
		tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		if err != nil {
			return err
		}
		defer tx.Close()
		buf := make([]byte, size)
		for range n {
			if _, err := tx.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("ethtooltest: sending over lo in %s: %v", f.ns, err)
	}
}
