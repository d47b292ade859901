package throughput

import (
	"context"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// dialFrom opens a raw connection to addr from the local IP src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// checkProtection runs the allow-list and per-client cap checks against a
// server on addr whose allowed clients are ok1 and ok2 (not bad), with
// MaxTestsPerClient 1.
func checkProtection(t *testing.T, addr string, srv *Server, errs <-chan *SessionError, ok1, ok2, bad string, dial func(src string) net.Conn) {
	t.Helper()
	run := func(src string, streams int) (*Result, error) {
		// Ended on a byte count, so that data moves however loaded the
		// machine (a timed test may move none).
		return Run(ctxT(t, 20*time.Second), addr, &Config{Bytes: 1 << 20, Streams: streams, Interval: -1, SocketOptions: SocketOptions{BindAddr: src}})
	}
	// A client outside the allow-list is refused before anything is read.
	_, err := run(bad, 1)
	require.ErrorIs(t, err, ErrAccessDenied)
	e := <-errs
	assert.Equal(t, reasonDenied, e.Reason)
	assert.Equal(t, bad, e.Remote.(*net.TCPAddr).IP.String())

	// An allowed client runs, its four streams getting past the cap of 1.
	res, err := run(ok1, 4)
	require.NoError(t, err)
	// Four streams ran and wrote every byte. The receiver's count is not
	// held to 1 MiB: it is what its streams had read when the client's
	// TEST_END came (as 3.21's server counts), and on a loaded machine
	// that may be none of it.
	assert.Equal(t, 4, res.Upload.Streams)
	assert.Equal(t, int64(1<<20), res.Upload.Sent.Bytes)
	assert.Equal(t, ok1, net.ParseIP(hostOf(res.LocalAddr)).String())

	// A stalled handshake holds ok1's only slot: its next test is refused,
	// while ok2 still gets in.
	// (First the server ends its side of the last test, whose control
	// connection counts until then: Stats counts the test completed
	// before that, as soon as the client can read its results.)
	for deadline := time.Now().Add(10 * time.Second); clientsHeld(srv) > 0; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the server never finished the first test")
	}
	stalled := dial(ok1)
	time.Sleep(100 * time.Millisecond) // let the server count it
	_, err = run(ok1, 1)
	require.ErrorIs(t, err, ErrAccessDenied)
	e = <-errs
	assert.Equal(t, reasonLimit, e.Reason)
	assert.ErrorIs(t, e.Err, ErrLimit)
	_, err = run(ok2, 1)
	require.NoError(t, err)
	// Once the stalled connection goes, ok1 is served again.
	require.NoError(t, stalled.Close())
	// (A loop rather than Eventually: the namespace test needs this
	// goroutine, the one in the client namespace, to make the sockets.)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := run(ok1, 1)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "ok1 not served after its stalled connection closed: %v", err)
	}
	st := srv.Stats()
	assert.Equal(t, int64(1), st.Failed[reasonDenied])
	assert.GreaterOrEqual(t, st.Failed[reasonLimit], int64(1))
}

func hostOf(a string) string {
	h, _, _ := net.SplitHostPort(a)
	return h
}

// TestProtectionLoopback uses three loopback addresses (linux routes all of
// 127/8 to lo); the namespace test below does the same across a veth pair.
func TestProtectionLoopback(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skipf("loopback aliases are not available here: %v", err)
	}
	probe.Close()
	addr, srv, errs := hookedServer(t, ServerConfig{MaxTestsPerClient: 1,
		AllowedClients: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.0.0.2/32")}})
	checkProtection(t, addr, srv, errs, "127.0.0.1", "127.0.0.2", "127.0.0.3", func(src string) net.Conn { return dialFrom(t, src, addr) })
}

func TestRefuseIsReadable(t *testing.T) {
	addr, _, errs := hookedServer(t, ServerConfig{AllowedClients: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	c := dialFrom(t, "127.0.0.1", addr)
	cookie, err := iperfwire.NewCookie()
	require.NoError(t, err)
	_, _ = c.Write(cookie)
	s, err := iperfwire.ReadState(c, 5*time.Second)
	require.NoError(t, err, "the client reads ACCESS_DENIED, not a reset")
	assert.Equal(t, iperfwire.AccessDenied, s)
	assert.Equal(t, reasonDenied, (<-errs).Reason)
}

func TestOneOffAndIdle(t *testing.T) {
	run := func(cfg ServerConfig) (string, <-chan error) {
		srv, err := NewServer(&cfg)
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), ln) }()
		return ln.Addr().String(), done
	}
	wait := func(done <-chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("Serve did not return %s", what)
		}
	}
	good, _ := testKeys(t)
	// One-off: a refused client does not count, the first test does.
	addr, done := run(ServerConfig{OneOff: true, Auth: &iperf3auth.Server{PrivateKey: good, Users: map[string]string{}}})
	_, err := Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 200 * time.Millisecond})
	require.ErrorIs(t, err, ErrAuthFailed)
	select {
	case err := <-done:
		t.Fatalf("a failed authentication ended a one-off server: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	addr, done = run(ServerConfig{OneOff: true})
	_, err = Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	wait(done, "after a one-off test")

	// Idle: no connection for the timeout ends Serve; a connection in
	// progress holds it.
	start := time.Now()
	_, done = run(ServerConfig{IdleTimeout: 300 * time.Millisecond})
	wait(done, "after the idle timeout")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	addr, done = run(ServerConfig{IdleTimeout: 300 * time.Millisecond})
	_, err = Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 800 * time.Millisecond})
	require.NoError(t, err, "a test longer than the idle timeout runs to its end")
	wait(done, "after the test and the idle timeout")
}

// TestAllowListMappedPrefix checks that an IPv4-mapped prefix means its IPv4
// network (clients' mapped addresses are unmapped), and that an invalid
// prefix fails NewServer instead of refusing everyone.
func TestAllowListMappedPrefix(t *testing.T) {
	addr, _, _ := hookedServer(t, ServerConfig{AllowedClients: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}})
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Bytes: 1 << 20, Interval: -1}) // a count: data moves
	require.NoError(t, err, "127.0.0.1 is in ::ffff:127.0.0.0/104")
	assert.Positive(t, res.Upload.Received.Bytes)

	_, err = NewServer(&ServerConfig{AllowedClients: []netip.Prefix{{}}})
	assert.ErrorContains(t, err, "invalid prefix")
}

// clientsHeld is how many connections the per-client cap counts.
func clientsHeld(srv *Server) int {
	srv.clients.mu.Lock()
	defer srv.clients.mu.Unlock()
	n := 0
	for _, c := range srv.clients.conns {
		n += c
	}
	return n
}
