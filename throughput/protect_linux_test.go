//go:build linux

package throughput

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestProtectionNetns serves in one namespace of a veth pair and runs
// clients from three addresses of the other.
func TestProtectionNetns(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	ip := peertest.Binary(t, "apt-get install iproute2", "ip")
	for _, a := range []string{"10.231.0.6/32", "10.231.0.7/32"} {
		out, err := exec.Command(ip, "-n", nsName(v.PeerNetnsPath()), "addr", "add", a, "dev", v.PeerName).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	out, err := exec.Command(ip, "-n", nsName(v.NetnsPath()), "route", "add", "10.231.0.0/24", "dev", v.Name).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var ln net.Listener
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		var err error
		ln, err = net.Listen("tcp", v.Addr+":0")
		return err
	}))
	errs := make(chan *SessionError, 64)
	srv, err := NewServer(&ServerConfig{MaxTestsPerClient: 1, OnFailure: func(_ net.Addr, err error) {
		e := asSession(err)
		errs <- e
	},
		AllowedClients: []netip.Prefix{netip.MustParsePrefix(v.PeerAddr + "/32"), netip.MustParsePrefix("10.231.0.6/32")}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled, "Serve returns ctx.Err()")
	})
	addr := ln.Addr().String()
	// Every client socket is made on a thread inside the peer namespace.
	inPeer := func(fn func()) {
		require.NoError(t, ethtooltest.InNetns(v.PeerNetnsPath(), func() error {
			fn()
			return nil
		}))
	}
	inPeer(func() {
		checkProtection(t, addr, srv, errs, v.PeerAddr, "10.231.0.6", "10.231.0.7", func(src string) net.Conn {
			return dialFrom(t, src, addr)
		})
	})
}

func nsName(path string) string { return path[len("/run/netns/"):] }
