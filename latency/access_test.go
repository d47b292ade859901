package latency

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/allowlist"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// failures collects what a Server reports to OnFailure.
type failures struct {
	mu      sync.Mutex
	remotes []net.Addr
	errs    []error
}

func (f *failures) record(remote net.Addr, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remotes = append(f.remotes, remote)
	f.errs = append(f.errs, err)
}

func (f *failures) snapshot() ([]net.Addr, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]net.Addr(nil), f.remotes...), append([]error(nil), f.errs...)
}

// serveAllowList serves network on listenHost with an allow-list of
// 127.0.0.1/32 until the test ends, and returns the address clients dial
// (on 127.0.0.1), the Server and its OnFailure record.
func serveAllowList(t *testing.T, network, listenHost string) (string, *Server, *failures) {
	t.Helper()
	f := &failures{}
	s, err := NewServer(&ServerConfig{
		AllowedClients: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		OnFailure:      f.record,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var local net.Addr
	if network == "udp" {
		pc, err := net.ListenPacket("udp", net.JoinHostPort(listenHost, "0"))
		if err != nil && listenHost != "127.0.0.1" {
			t.Skipf("no dual-stack UDP socket on %s: %v", listenHost, err)
		}
		require.NoError(t, err)
		local = pc.LocalAddr()
		go func() { done <- s.ServePacket(ctx, pc) }()
	} else {
		ln, err := net.Listen("tcp", net.JoinHostPort(listenHost, "0"))
		if err != nil && listenHost != "127.0.0.1" {
			t.Skipf("no dual-stack TCP socket on %s: %v", listenHost, err)
		}
		require.NoError(t, err)
		local = ln.Addr()
		go func() { done <- s.Serve(ctx, ln) }()
	}
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
	_, port, err := net.SplitHostPort(local.String())
	require.NoError(t, err)
	return net.JoinHostPort("127.0.0.1", port), s, f
}

// outsider is the loopback address the refused clients use; linux routes
// all of 127.0.0.0/8 to lo, other systems may not.
const outsider = "127.0.0.2"

func skipWithoutOutsider(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "assign requested address") {
		t.Skipf("cannot bind %s on this system: %v", outsider, err)
	}
}

func pingMsg(seq uint64) []byte {
	return append(wire.AppendHeader(nil, wire.Header{Seq: seq, Flags: wire.FlagClient | wire.FlagPong, Length: 32}), make([]byte, 18)...)
}

// requireDenied checks the OnFailure record: n reports, all ErrAccessDenied
// from the outsider.
func requireDenied(t *testing.T, f *failures, n int) {
	t.Helper()
	require.Eventually(t, func() bool { _, errs := f.snapshot(); return len(errs) >= n }, 5*time.Second, time.Millisecond)
	remotes, errs := f.snapshot()
	require.Len(t, errs, n)
	for i, err := range errs {
		assert.ErrorIs(t, err, ErrAccessDenied)
		assert.True(t, strings.HasPrefix(err.Error(), "latency: "), err.Error())
		require.NotNil(t, remotes[i])
		ip, ok := allowlist.PeerIP(remotes[i])
		assert.True(t, ok)
		assert.Equal(t, netip.MustParseAddr(outsider), ip)
	}
}

// allowedClientServed checks that a client on 127.0.0.1 gets every reply.
func allowedClientServed(t *testing.T, network, addr string) {
	t.Helper()
	res, err := PingPong(context.Background(), addr, &PingPongConfig{
		Network: network, Count: 20, MessageSize: 32, ReadTimeout: 3 * time.Second,
	})
	require.NoError(t, err)
	assert.Equal(t, int64(20), res.Observations)
}

func TestServerAllowedClientsTCP(t *testing.T) {
	// "::" listens dual-stack: its IPv4 clients appear as IPv4-mapped
	// IPv6 addresses, which must match the IPv4 prefix.
	for _, host := range []string{"127.0.0.1", "::"} {
		t.Run(host, func(t *testing.T) {
			addr, srv, f := serveAllowList(t, "tcp", host)
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(outsider)}, Timeout: 5 * time.Second}
			c, err := d.Dial("tcp", addr)
			skipWithoutOutsider(t, err)
			require.NoError(t, err)
			defer c.Close()
			_, _ = c.Write(pingMsg(1)) // may already fail: the server closes at once
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			n, err := c.Read(make([]byte, 64))
			assert.Zero(t, n, "no echo for a refused client")
			require.Error(t, err)
			assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server closed the connection at once")
			requireDenied(t, f, 1)
			st := srv.Stats()
			assert.Equal(t, ServerStats{Denied: 1}, st, "nothing was read from the refused connection")

			allowedClientServed(t, "tcp", addr)
			st = srv.Stats()
			assert.Equal(t, int64(1), st.Denied)
			assert.Equal(t, int64(1), st.Conns, "the allowed connection was served")
			assert.Zero(t, st.ConnsRefused)
		})
	}
}

func TestServerAllowedClientsUDP(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::"} {
		t.Run(host, func(t *testing.T) {
			addr, srv, f := serveAllowList(t, "udp", host)
			raddr, err := net.ResolveUDPAddr("udp", addr)
			require.NoError(t, err)
			c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(outsider)})
			skipWithoutOutsider(t, err)
			require.NoError(t, err)
			defer c.Close()
			const sent = 5
			for i := range sent {
				_, err := c.WriteToUDP(pingMsg(uint64(i)), raddr)
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { return srv.Stats().Denied == sent }, 5*time.Second, time.Millisecond,
				"every datagram from outside is counted")
			requireDenied(t, f, 1) // once per source
			// The server has handled (and dropped) every datagram: a reply
			// would be on its way already.
			require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
			_, _, err = c.ReadFromUDP(make([]byte, 64))
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no echo for a refused client")
			assert.Equal(t, ServerStats{Denied: sent}, srv.Stats(), "refused datagrams count nowhere else")

			allowedClientServed(t, "udp", addr)
			served := srv.Stats()
			assert.Equal(t, int64(20), served.Replies)
			_, err = c.WriteToUDP(pingMsg(99), raddr)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return srv.Stats().Denied == sent+1 }, 5*time.Second, time.Millisecond)
			served.Denied = sent + 1
			assert.Equal(t, served, srv.Stats())
			requireDenied(t, f, 1) // still once: the same source within the minute
		})
	}
}

// TestServerAllowedClientsUnix checks that unix-socket peers, which have no
// IP address, are refused by an allow-list rather than crashing anything.
func TestServerAllowedClientsUnix(t *testing.T) {
	dir := t.TempDir()
	f := &failures{}
	s, err := NewServer(&ServerConfig{AllowedClients: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, OnFailure: f.record})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	require.NoError(t, err)
	pc, err := net.ListenPacket("unixgram", filepath.Join(dir, "g"))
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { assert.ErrorIs(t, s.Serve(ctx, ln), context.Canceled) })
	wg.Go(func() { assert.ErrorIs(t, s.ServePacket(ctx, pc), context.Canceled) })
	defer wg.Wait()
	defer cancel()

	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, _ = c.Write(pingMsg(1))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(make([]byte, 64))
	require.Error(t, err)
	assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed at once")

	g, err := net.DialUnix("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "c"), Net: "unixgram"}, pc.LocalAddr().(*net.UnixAddr))
	require.NoError(t, err)
	defer g.Close()
	_, err = g.Write(pingMsg(2))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Denied == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, g.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = g.Read(make([]byte, 64))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no echo")

	_, errs := f.snapshot()
	require.Len(t, errs, 2)
	for _, err := range errs {
		assert.ErrorIs(t, err, ErrAccessDenied)
	}
	assert.Zero(t, s.Stats().Messages)
}

func TestNewServerAllowedClients(t *testing.T) {
	_, err := NewServer(&ServerConfig{AllowedClients: []netip.Prefix{{}}})
	require.ErrorIs(t, err, ErrInvalidConfig, "the zero Prefix matches nothing: a mistake")

	list := []netip.Prefix{netip.MustParsePrefix("::ffff:10.1.0.0/112"), netip.MustParsePrefix("192.0.2.7/24")}
	s, err := NewServer(&ServerConfig{AllowedClients: list})
	require.NoError(t, err)
	list[0] = netip.MustParsePrefix("0.0.0.0/0") // the Server keeps its own copy
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.0.2.0/24")}, s.cfg.AllowedClients)
	for addr, want := range map[string]bool{
		"10.1.2.3": true, "::ffff:10.1.2.3": true, "192.0.2.200": true, "::ffff:192.0.2.1": true,
		"10.2.0.1": false, "192.0.3.1": false, "::1": false, "fe80::1%eth0": false,
	} {
		ip, ok := allowlist.PeerIP(&net.UDPAddr{IP: net.ParseIP(strings.Split(addr, "%")[0])})
		assert.Equal(t, want, s.admits(ip, ok), addr)
	}
	assert.False(t, s.admits(netip.Addr{}, false), "a peer without an IP address is refused")
	open, err := NewServer(nil)
	require.NoError(t, err)
	assert.True(t, open.admits(netip.Addr{}, false), "without an allow-list every peer is served")
}

func TestDeniedSources(t *testing.T) {
	var d deniedSources
	t0 := time.Unix(1000, 0)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	assert.True(t, d.first(a, t0))
	assert.False(t, d.first(a, t0.Add(time.Second)), "once per source")
	assert.True(t, d.first(b, t0.Add(time.Second)))
	assert.True(t, d.first(netip.Addr{}, t0.Add(time.Second)), "sources without an IP count as one")
	assert.False(t, d.first(netip.Addr{}, t0.Add(time.Second)))
	assert.True(t, d.first(a, t0.Add(deniedWindow)), "again in the next window")
	assert.True(t, d.first(b, t0.Add(deniedWindow+time.Second)), "and b too")
	assert.False(t, d.first(b, t0.Add(deniedWindow+2*time.Second)))

	// A flood of spoofed sources: at most deniedMaxSources reports a window.
	var e deniedSources
	reported := 0
	for i := range 3 * deniedMaxSources {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if e.first(ip, t0) {
			reported++
		}
	}
	assert.Equal(t, deniedMaxSources, reported)
	assert.True(t, e.first(netip.MustParseAddr("192.0.2.1"), t0.Add(deniedWindow)), "a new window reports again")
}

// TestSockperfClientAllowList runs stock `sockperf ping-pong` clients bound
// to an address outside and inside the allow-list.
func TestSockperfClientAllowList(t *testing.T) {
	bin := sockperfBinary(t)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr, srv, f := serveAllowList(t, network, "127.0.0.1")
			host, port, _ := net.SplitHostPort(addr)
			args := []string{"ping-pong", "-i", host, "-p", port, "-t", "1", "-m", "64"}
			if network == "tcp" {
				args = append(args, "--tcp")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Refused: sockperf gets no reply (UDP) or sees the connection
			// closed (TCP, exit status 7); its exit status is its business.
			out, _ := exec.CommandContext(ctx, bin, append(args, "--client_ip", outsider)...).CombinedOutput()
			require.NoError(t, ctx.Err(), "sockperf: %s", out)
			if network == "udp" {
				assert.Contains(t, string(out), "No messages were received from the server")
			}
			require.Eventually(t, func() bool { return srv.Stats().Denied > 0 }, 5*time.Second, time.Millisecond, "sockperf: %s", out)
			assert.Zero(t, srv.Stats().Replies)
			assert.Zero(t, srv.Stats().Messages)
			requireDenied(t, f, 1)

			rep, _ := runSockperf(t, append(args, "--client_ip", "127.0.0.1")...)
			assert.Positive(t, rep.TotalReceived)
			assert.GreaterOrEqual(t, srv.Stats().Replies, rep.TotalReceived)
		})
	}
}
