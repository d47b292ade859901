//go:build linux

package ethtool

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/require"
)

// BenchmarkVethSnapshot compares, on the same veth inside a network
// namespace, a live Snapshot through the ioctl with running `ethtool -S`
// and parsing its output. The binary runs from a thread that joined the
// namespace, so neither side pays for `ip netns exec`.
func BenchmarkVethSnapshot(b *testing.B) {
	v := ethtooltest.NewVeth(b)
	bin := peertest.Binary(b, "apt-get install ethtool", "ethtool")
	c := clientIn(b, v.NetnsPath())

	b.Run("ioctl", func(b *testing.B) {
		b.ReportAllocs()
		s := &Snapshot{}
		for b.Loop() {
			if err := c.snapshotInto(v.Name, s, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ioctl-new-snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Snapshot(v.Name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ethtool-binary", func(b *testing.B) {
		b.ReportAllocs()
		require.NoError(b, ethtooltest.InNetns(v.NetnsPath(), func() error {
			for b.Loop() {
				out, err := exec.Command(bin, "-S", v.Name).Output()
				if err != nil {
					return err
				}
				if _, err := parseStats(bytes.NewReader(out)); err != nil {
					return err
				}
			}
			return nil
		}))
	})
}
