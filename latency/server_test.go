package latency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer serves network on a loopback port until the test ends and
// returns the address and the Server.
func startServer(t testing.TB, network string, cfg *ServerConfig) (string, *Server) {
	t.Helper()
	s, err := NewServer(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var addr string
	var wg sync.WaitGroup
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		addr = pc.LocalAddr().String()
		wg.Go(func() {
			if err := s.ServePacket(ctx, pc); !errors.Is(err, context.Canceled) {
				t.Errorf("server: %v", err)
			}
		})
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr = ln.Addr().String()
		wg.Go(func() {
			if err := s.Serve(ctx, ln); !errors.Is(err, context.Canceled) {
				t.Errorf("server: %v", err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return addr, s
}

// goodClient checks that the server still answers a well-behaved client: at
// least minAnswered of 50 messages. Over TCP a reply is awaited 10 s, so
// that a loaded machine's stall is not a drop; over UDP 300 ms, as a flood
// drops datagrams.
func goodClient(t *testing.T, network, addr string, minAnswered int64) {
	t.Helper()
	wait := 300 * time.Millisecond
	if network == "tcp" {
		wait = 10 * time.Second
	}
	res, err := PingPong(context.Background(), addr, &PingPongConfig{
		Network: network, Count: 50, MessageSize: 32, ReadTimeout: wait,
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Observations, minAnswered)
	assert.Equal(t, int64(50), res.Observations+res.Dropped)
}

func TestServerUDPHostile(t *testing.T) {
	addr, srv := startServer(t, "udp", &ServerConfig{MaxMessageSize: 1000})
	c, err := net.Dial("udp", addr)
	require.NoError(t, err)
	defer c.Close()
	bad := [][]byte{
		{},
		make([]byte, 13),
		wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 64}),         // length lies (14 sent)
		append(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagPong, Length: 20}), 1, 2, 3, 4, 5, 6), // no client flag
		append(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 2000}), make([]byte, 1986)...),
	}
	for _, b := range bad {
		_, err := c.Write(b)
		require.NoError(t, err)
	}
	// A flood of garbage and of valid messages from another socket while a
	// good client measures.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		msg := append(wire.AppendHeader(nil, wire.Header{Seq: 9, Flags: wire.FlagClient | wire.FlagPong, Length: 100}), make([]byte, 86)...)
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = c.Write(bad[i%len(bad)])
			_, _ = c.Write(msg)
		}
	}()
	// A datagram flood fills the server's socket buffer, so the kernel drops
	// some of the good client's datagrams too (how many is the machine's:
	// its share of the CPU against the flooder); the server must keep
	// answering.
	goodClient(t, "udp", addr, 1)
	cancel()
	wg.Wait()
	assert.GreaterOrEqual(t, srv.Stats().Rejected, int64(len(bad)), "every kind of bad datagram is counted")
}

func TestServerTCPHostile(t *testing.T) {
	addr, srv := startServer(t, "tcp", &ServerConfig{MaxMessageSize: 1000, MaxConns: 4, IdleTimeout: 300 * time.Millisecond})
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err := c.Read(make([]byte, 100))
		return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
	// Length below the header, and above the maximum: the connection is closed.
	short := dial()
	_, _ = short.Write(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 5}))
	assert.True(t, closed(short), "length < 14 closes the connection")
	long := dial()
	_, _ = long.Write(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 1 << 30}))
	assert.True(t, closed(long), "length > max closes the connection")
	// Wrong flags: no reply, connection stays usable.
	wrong := dial()
	_, _ = wrong.Write(append(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagPong, Length: 20}), make([]byte, 6)...))
	ok := append(wire.AppendHeader(nil, wire.Header{Seq: 2, Flags: wire.FlagClient | wire.FlagPong, Length: 20}), make([]byte, 6)...)
	_, _ = wrong.Write(ok)
	_ = wrong.SetReadDeadline(time.Now().Add(3 * time.Second))
	reply := make([]byte, 20)
	_, err := io.ReadFull(wrong, reply)
	require.NoError(t, err)
	h, err := wire.DecodeHeader(reply)
	require.NoError(t, err)
	assert.Equal(t, wire.Header{Seq: 2, Flags: wire.FlagPong, Length: 20}, h, "only the reply to the valid message, client flag cleared")

	// The server gives back the slots of the two connections it closed
	// before it counts them as rejected (beside the wrong-flag message):
	// until then a fifth connection would be one too many.
	require.Eventually(t, func() bool { return srv.Stats().Rejected >= 3 }, 5*time.Second, time.Millisecond)

	// Half a frame, then silence: the idle timeout closes it; meanwhile a
	// good client is served.
	stall := dial()
	_, _ = stall.Write(ok[:10])
	flood := dial()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a peer that floods valid messages and never reads
		defer wg.Done()
		big := bytes.Repeat(ok, 1000)
		for ctx.Err() == nil {
			_ = flood.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = flood.Write(big)
		}
	}()
	goodClient(t, "tcp", addr, 50)
	assert.True(t, closed(stall), "a stalled half frame is cut off by the idle timeout")
	cancel()
	wg.Wait()

	// Too many connections: those beyond MaxConns are closed at once.
	var extra []net.Conn
	for range 6 {
		extra = append(extra, dial())
	}
	refused := 0
	for _, c := range extra {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			refused++
		}
	}
	assert.Greater(t, refused, 0)
	st := srv.Stats()
	assert.GreaterOrEqual(t, st.Rejected, int64(2))
	assert.GreaterOrEqual(t, st.Timeouts, int64(1))
	assert.Greater(t, st.ConnsRefused, int64(0))
}

func TestNewServerInvalid(t *testing.T) {
	for _, cfg := range []*ServerConfig{{MaxMessageSize: 13}, {MaxConns: -1}, {IdleTimeout: -1}} {
		_, err := NewServer(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
	s, err := NewServer(nil)
	require.NoError(t, err)
	assert.ErrorIs(t, s.ListenAndServe(context.Background(), "sctp", "127.0.0.1:0"), ErrInvalidConfig)
	assert.Error(t, s.Serve(context.Background(), nil), "a nil listener is refused, not a panic")
	assert.Error(t, s.ServePacket(context.Background(), nil), "a nil packet conn is refused, not a panic")
}

func TestServerListenAndServe(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			bound := make(chan net.Addr, 1)
			s, err := NewServer(&ServerConfig{OnListen: func(a net.Addr) { bound <- a }})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.ListenAndServe(ctx, network, "127.0.0.1:0") }()
			var addr net.Addr
			select {
			case addr = <-bound:
			case err := <-done:
				t.Fatalf("ListenAndServe: %v", err)
			}
			_, port, err := net.SplitHostPort(addr.String())
			require.NoError(t, err)
			assert.NotEqual(t, "0", port)
			res, err := PingPong(context.Background(), addr.String(), &PingPongConfig{
				Network: network, Count: 10, ReadTimeout: time.Second,
			})
			require.NoError(t, err)
			assert.Equal(t, int64(10), res.Observations)
			cancel()
			start := time.Now()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
				t.Logf("ListenAndServe returned %v after cancel", time.Since(start))
			case <-time.After(time.Second):
				t.Fatal("ListenAndServe did not return within 1 s of ctx ending")
			}
		})
	}
}

// TestServerUnixListener serves a unix-socket listener: sockperf's framing
// works over any stream, so any net.Listener is served, never a panic.
func TestServerUnixListener(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	s, err := NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	msg := append(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 20}), make([]byte, 6)...)
	_, err = c.Write(msg)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	reply := make([]byte, 20)
	_, err = io.ReadFull(c, reply)
	require.NoError(t, err)
	h, err := wire.DecodeHeader(reply)
	require.NoError(t, err)
	assert.Equal(t, wire.Header{Seq: 1, Flags: wire.FlagPong, Length: 20}, h)
	cancel()
	returnsCanceled(t, done, "Serve")
	assert.Equal(t, int64(1), s.Stats().Replies)
}

// failingListener hands out its first connection, then fails.
type failingListener struct {
	net.Listener
	n int
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n++; l.n > 1 {
		return nil, errors.New("accept broke")
	}
	return l.Listener.Accept()
}

// TestServerAcceptFailureClosesConns checks that Serve returns promptly when
// Accept fails, closing the connections it serves instead of waiting for
// their idle timeout.
func TestServerAcceptFailureClosesConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := NewServer(nil) // 30 s idle timeout
	require.NoError(t, err)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	err = s.Serve(context.Background(), &failingListener{Listener: ln})
	assert.ErrorContains(t, err, "accept broke")
	assert.ErrorContains(t, err, "latency: ")
	assert.Less(t, time.Since(start), 5*time.Second, "the open connection was closed, not waited for")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err, "the server closed the connection")
	assert.NotErrorIs(t, err, os.ErrDeadlineExceeded)
}

// TestServerUnixgram serves a unix datagram socket: ServePacket takes any
// net.PacketConn.
func TestServerUnixgram(t *testing.T) {
	dir := t.TempDir()
	pc, err := net.ListenPacket("unixgram", filepath.Join(dir, "s"))
	require.NoError(t, err)
	s, err := NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServePacket(ctx, pc) }()
	c, err := net.DialUnix("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "c"), Net: "unixgram"}, pc.LocalAddr().(*net.UnixAddr))
	require.NoError(t, err)
	defer c.Close()
	msg := append(wire.AppendHeader(nil, wire.Header{Seq: 7, Flags: wire.FlagClient | wire.FlagPong, Length: 32}), make([]byte, 18)...)
	_, err = c.Write(msg)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	reply := make([]byte, 100)
	n, err := c.Read(reply)
	require.NoError(t, err)
	h, err := wire.DecodeHeader(reply[:n])
	require.NoError(t, err)
	assert.Equal(t, wire.Header{Seq: 7, Flags: wire.FlagPong, Length: 32}, h)
	cancel()
	returnsCanceled(t, done, "ServePacket")
}

// TestServerCancelWithOpenConns checks that Serve and ServePacket return
// promptly when ctx ends while clients are connected and mid-frame.
func TestServerCancelWithOpenConns(t *testing.T) {
	s, err := NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	tcpDone, udpDone := make(chan error, 1), make(chan error, 1)
	go func() { tcpDone <- s.Serve(ctx, ln) }()
	go func() { udpDone <- s.ServePacket(ctx, pc) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(make([]byte, 7)) // half a header: the connection's goroutine waits in a read
	require.NoError(t, err)
	// A peer that sends pongs and never reads: that connection's goroutine
	// ends up blocked writing replies.
	flood, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer flood.Close()
	msg := bytes.Repeat(append(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 1000}), make([]byte, 986)...), 64)
	var fw sync.WaitGroup
	fw.Go(func() {
		for {
			_ = flood.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := flood.Write(msg); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	})
	defer fw.Wait()
	defer flood.Close()
	require.Eventually(t, func() bool { return s.Stats().Conns == 2 && s.Stats().Replies > 1000 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // let the socket buffers fill
	cancel()
	start := time.Now()
	for name, done := range map[string]chan error{"Serve": tcpDone, "ServePacket": udpDone} {
		returnsCanceled(t, done, name)
	}
	t.Logf("both returned %v after cancel", time.Since(start))
	assert.Equal(t, int64(0), s.Stats().Timeouts, "a cancel is not a timeout")
}

func TestServerOnFailure(t *testing.T) {
	var mu sync.Mutex
	var got []error
	cfg := &ServerConfig{MaxConns: 1, MaxMessageSize: 100, IdleTimeout: 200 * time.Millisecond, OnFailure: func(remote net.Addr, err error) {
		assert.NotNil(t, remote)
		mu.Lock()
		got = append(got, err)
		mu.Unlock()
	}}
	addr, srv := startServer(t, "tcp", cfg)
	first, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer first.Close()
	require.Eventually(t, func() bool { return srv.Stats().Conns == 1 }, 5*time.Second, 5*time.Millisecond)
	second, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer second.Close()
	require.Eventually(t, func() bool { return srv.Stats().ConnsRefused == 1 }, 5*time.Second, 5*time.Millisecond)
	_, err = first.Write(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 1000}))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.Stats().Rejected == 1 }, 5*time.Second, 5*time.Millisecond)
	// The first connection gave its slot back before Rejected counted it.
	third, err := net.Dial("tcp", addr) // now alone: served, then silent
	require.NoError(t, err)
	defer third.Close()
	require.Eventually(t, func() bool { return srv.Stats().Timeouts == 1 }, 5*time.Second, 5*time.Millisecond)

	uaddr, usrv := startServer(t, "udp", cfg)
	u, err := net.Dial("udp", uaddr)
	require.NoError(t, err)
	defer u.Close()
	_, err = u.Write(make([]byte, 5))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return usrv.Stats().Rejected == 1 }, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 4)
	assert.ErrorIs(t, got[0], errTooManyConns)
	assert.ErrorIs(t, got[0], ErrAccessDenied, "too many connections is an access denial")
	assert.ErrorIs(t, got[1], ErrMalformed)
	assert.ErrorIs(t, got[1], wire.ErrBadLength)
	assert.ErrorIs(t, got[2], os.ErrDeadlineExceeded)
	assert.ErrorIs(t, got[3], ErrMalformed)
	assert.ErrorContains(t, got[3], "latency: ")
}

func TestServerUDPSlowTrafficAcrossDeadlines(t *testing.T) {
	// Read deadlines expire between datagrams; replies must keep flowing.
	addr, srv := startServer(t, "udp", &ServerConfig{IdleTimeout: 30 * time.Millisecond, WriteTimeout: 10 * time.Millisecond})
	for i := range 3 {
		res, err := PingPong(context.Background(), addr, &PingPongConfig{Count: 2, ReadTimeout: time.Second})
		require.NoError(t, err)
		assert.Equal(t, int64(2), res.Observations, "round %d", i)
		time.Sleep(80 * time.Millisecond)
	}
	assert.Equal(t, int64(6), srv.Stats().Replies)
}

// flakyListener fails its first fails Accepts with err, then hands out the
// connections sent on conns until it is closed.
type flakyListener struct {
	mu    sync.Mutex
	fails int
	err   error
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newFlakyListener(fails int, err error) *flakyListener {
	return &flakyListener{fails: fails, err: err, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *flakyListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *flakyListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// Out of file descriptors, Accept fails for a while: Serve reports each
// failure, waits 5 ms doubling up to 1 s, and serves again once Accept
// works, as net/http does.
func TestServerAcceptTemporaryError(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	var mu sync.Mutex
	var reported []error
	s, err := NewServer(&ServerConfig{OnFailure: func(remote net.Addr, err error) {
		assert.Nil(t, remote)
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	require.NoError(t, err)
	var waits []time.Duration
	s.sleepFn = func(ctx context.Context, d time.Duration) bool {
		waits = append(waits, d) // only Serve's goroutine sleeps
		return ctx.Err() == nil
	}
	ln := newFlakyListener(10, emfile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	client, server := net.Pipe()
	defer client.Close()
	select {
	case ln.conns <- server:
	case err := <-served:
		t.Fatalf("Serve returned on a temporary Accept error: %v", err)
	}
	msg := wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: wire.HeaderSize})
	require.NoError(t, client.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = client.Write(msg)
	require.NoError(t, err)
	reply := make([]byte, len(msg))
	_, err = io.ReadFull(client, reply)
	require.NoError(t, err, "served after the failures")

	ms := time.Millisecond
	assert.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, waits)
	assert.Equal(t, int64(10), s.Stats().AcceptErrors)
	mu.Lock()
	require.Len(t, reported, 10)
	for _, err := range reported {
		assert.ErrorIs(t, err, syscall.EMFILE)
		assert.ErrorContains(t, err, "accept failed")
		assert.ErrorContains(t, err, "latency: ")
	}
	mu.Unlock()

	cancel()
	returnsCanceled(t, served, "Serve")
}

// Cancelled while it waits out Accept failures, Serve returns at once; a
// closed listener (a permanent error) still ends it.
func TestServerAcceptBackoffCancel(t *testing.T) {
	s, err := NewServer(nil)
	require.NoError(t, err)
	ln := newFlakyListener(1<<30, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	require.Eventually(t, func() bool { return s.Stats().AcceptErrors >= 3 }, 5*time.Second, time.Millisecond)
	cancel()
	returnsCanceled(t, served, "Serve")

	ln = newFlakyListener(0, nil)
	ln.Close()
	err = s.Serve(context.Background(), ln)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// A connection closed for a malformed frame gives its MaxConns slot back
// before OnFailure hears of it, so that a client told of the failure can
// connect again at once. The hook holds the report until the next
// connection has been accepted or refused.
func TestServerReportsAfterFreeingSlot(t *testing.T) {
	reported, release := make(chan struct{}), make(chan struct{})
	addr, srv := startServer(t, "tcp", &ServerConfig{MaxConns: 1, MaxMessageSize: 100, OnFailure: func(_ net.Addr, err error) {
		if errors.Is(err, ErrMalformed) {
			close(reported)
			<-release
		}
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	first, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer first.Close()
	_, err = first.Write(wire.AppendHeader(nil, wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: 1000}))
	require.NoError(t, err)
	select {
	case <-reported:
	case <-time.After(5 * time.Second):
		t.Fatal("the malformed frame was not reported")
	}
	second, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer second.Close()
	require.Eventually(t, func() bool { st := srv.Stats(); return st.Conns == 2 || st.ConnsRefused > 0 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(0), srv.Stats().ConnsRefused, "the reported connection still held its slot")
	close(release)
}

// Good messages that share a read with a frame whose length is bad are
// answered before the connection is closed.
func TestServerAnswersBeforeBadFrame(t *testing.T) {
	addr, srv := startServer(t, "tcp", &ServerConfig{MaxMessageSize: 100})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	var b []byte
	for seq := range uint64(2) {
		b = wire.AppendHeader(b, wire.Header{Seq: seq + 1, Flags: wire.FlagClient | wire.FlagPong, Length: wire.HeaderSize})
	}
	b = wire.AppendHeader(b, wire.Header{Seq: 3, Flags: wire.FlagClient | wire.FlagPong, Length: 1000})
	_, err = c.Write(b) // one write: most likely one read on the server
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "closed after the replies")
	require.Len(t, got, 2*wire.HeaderSize, "both good messages answered")
	for i := range 2 {
		h, err := wire.DecodeHeader(got[i*wire.HeaderSize:])
		require.NoError(t, err)
		assert.Equal(t, uint64(i+1), h.Seq)
		assert.Zero(t, h.Flags&wire.FlagClient)
	}
	require.Eventually(t, func() bool { return srv.Stats().Rejected == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(2), srv.Stats().Replies)
}

// returnsCanceled waits for a server's return after its ctx was cancelled:
// within 1 s (the contract is 100 ms; the bound leaves room for -race on a
// loaded machine), with context.Canceled.
func returnsCanceled(t *testing.T, done <-chan error, name string) {
	t.Helper()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled, name)
	case <-time.After(time.Second):
		t.Fatalf("%s did not return within 1 s of ctx ending", name)
	}
}

// A 1 MiB TCP ping-pong against a Server with its default limit (65507
// bytes, as sockperf server's default -m): the server closes the
// connection, and the client's error says why, naming the server's field
// and its default, beside a result that can be read. The server counts the
// refusal. With MaxMessageSize raised, the same run is answered.
func TestPingPongOverServerMessageLimit(t *testing.T) {
	var mu sync.Mutex
	var failures []error
	addr, s := startServer(t, "tcp", &ServerConfig{OnFailure: func(_ net.Addr, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, err)
	}})
	cfg := &PingPongConfig{Network: "tcp", MessageSize: 1 << 20, Count: 2, ReadTimeout: 10 * time.Second}
	r, err := PingPong(context.Background(), addr, cfg)
	require.Error(t, err)
	require.NotNil(t, r)
	assert.Contains(t, err.Error(), "MessageSize 1048576 exceeds")
	assert.Contains(t, err.Error(), "ServerConfig.MaxMessageSize, 65507 bytes by default")
	assert.Zero(t, r.Received)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(failures) > 0 }, 5*time.Second, time.Millisecond)
	mu.Lock()
	assert.ErrorIs(t, failures[0], ErrMalformed, "the server's side: a message over its limit")
	mu.Unlock()
	assert.Positive(t, s.Stats().Rejected)

	big, _ := startServer(t, "tcp", &ServerConfig{MaxMessageSize: 1 << 20})
	r, err = PingPong(context.Background(), big, cfg)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Received)
	assert.Equal(t, 1<<20, r.messageSize)
}
