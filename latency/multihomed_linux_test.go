//go:build linux

package latency_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/latency"
)

// multiHomed is a lab whose host B holds a secondary address beside its
// primary one (lab.B.Addr), as an EC2 host with a second ENI or a
// secondary private address does; A routes to it over the veth.
func multiHomed(t *testing.T) (*pathlab.Lab, netip.Addr, string) {
	lab := pathlab.New(t, nil)
	sockperf := peertest.Binary(t, "apt-get install sockperf", "sockperf")
	if lab == nil || t.Skipped() {
		return nil, netip.Addr{}, ""
	}
	secondary := netip.MustParseAddr("198.19.254.9")
	lab.B.Run(t, "ip", "addr", "add", secondary.String()+"/32", "dev", lab.B.Dev)
	lab.A.Run(t, "ip", "route", "add", secondary.String()+"/32", "dev", lab.A.Dev)
	return lab, secondary, sockperf
}

// pingFromA runs PingPong inside A's namespace.
func pingFromA(lab *pathlab.Lab, addr string, cfg *latency.PingPongConfig) (res *latency.PingPongResult, err error) {
	if derr := lab.A.Do(func() error { res, err = latency.PingPong(context.Background(), addr, cfg); return nil }); derr != nil {
		return nil, derr
	}
	return res, err
}

// TestMultiHomedServer: our server, bound to the wildcard in B, answers
// requests to B's secondary address from that address, so our client's
// connected socket and stock `sockperf ping-pong` both take the replies;
// stock `sockperf server` answers from the primary address, and our
// client's error says so (issue 41).
func TestMultiHomedServer(t *testing.T) {
	lab, secondary, sockperf := multiHomed(t)
	if lab == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, network := range []string{"udp", "udp4"} {
		var pc net.PacketConn
		require.NoError(t, lab.B.Do(func() (err error) { pc, err = net.ListenPacket(network, ":0"); return err }))
		srv, err := latency.NewServer(nil)
		require.NoError(t, err)
		wg.Go(func() {
			if err := srv.ServePacket(ctx, pc); !errors.Is(err, context.Canceled) {
				t.Errorf("server: %v", err)
			}
		})
		port := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		for _, host := range []netip.Addr{lab.B.Addr, secondary} {
			addr := net.JoinHostPort(host.String(), port)
			res, err := pingFromA(lab, addr, &latency.PingPongConfig{Count: 50, ReadTimeout: 10 * time.Second})
			require.NoError(t, err, "%s server, our client to %s", network, addr)
			assert.Equal(t, int64(50), res.Received, addr)
		}
		out, err := lab.A.Command(ctx, sockperf, "ping-pong", "-i", secondary.String(), "-p", port, "-t", "1").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "Summary: Latency is", "stock sockperf ping-pong measured: %s", out)
		assert.NotContains(t, string(out), "No messages were received")
	}

	// Stock sockperf server on the wildcard: it answers the secondary
	// address's requests from the primary one.
	port := strconv.Itoa(peertest.FreePort(t))
	cmd := lab.B.Command(ctx, sockperf, "server", "-p", port)
	var out peertest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	wg.Go(func() { _ = cmd.Wait() })
	primary := net.JoinHostPort(lab.B.Addr.String(), port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := pingFromA(lab, primary, &latency.PingPongConfig{Count: 1, ReadTimeout: 100 * time.Millisecond})
		if err == nil && res.Observations == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "sockperf server did not answer on %s: %s", primary, out.String())
		time.Sleep(50 * time.Millisecond)
	}
	_, err := pingFromA(lab, net.JoinHostPort(secondary.String(), port), &latency.PingPongConfig{Count: 3, ReadTimeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, latency.ErrNoReply)
	assert.ErrorContains(t, err, "multi-homed")
	assert.ErrorContains(t, err, "got its reply from "+primary, "the check names the address that answered")
	assert.True(t, strings.Contains(err.Error(), secondary.String()), "and the address asked: %v", err)
}
