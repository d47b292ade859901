package throughput

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goodRun runs a short test in the background and returns its outcome.
func goodRun(t *testing.T, addr string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: time.Second, Interval: -1})
		// How much a timed test moves is the loaded machine's business
		// (it may hold loopback data back for the whole second); what the
		// hostile peers must not do is make it fail or garble its counts.
		if err == nil && (res.Upload == nil || res.Upload.Received.Bytes > res.Upload.Sent.Bytes) {
			err = io.ErrUnexpectedEOF
		}
		ch <- err
	}()
	return ch
}

func dialRaw(t *testing.T, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawHandshake sends a cookie and reads PARAM_EXCHANGE.
func rawHandshake(t *testing.T, addr string) (net.Conn, []byte) {
	c := dialRaw(t, addr)
	cookie, err := iperfwire.NewCookie()
	require.NoError(t, err)
	_, err = c.Write(cookie)
	require.NoError(t, err)
	s, err := iperfwire.ReadState(c, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.ParamExchange, s)
	return c, cookie
}

// rawRunning starts a one-stream test with params by hand and returns its
// control connection and data stream once the server says it runs.
func rawRunning(t *testing.T, addr, params string) (ctrl, data net.Conn) {
	t.Helper()
	c, cookie := rawHandshake(t, addr)
	require.NoError(t, iperfwire.WriteJSON(c, []byte(params), time.Second))
	s, err := iperfwire.ReadState(c, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.CreateStreams, s)
	d := dialRaw(t, addr)
	_, err = d.Write(cookie)
	require.NoError(t, err)
	for _, want := range []iperfwire.State{iperfwire.TestStart, iperfwire.TestRunning} {
		s, err := iperfwire.ReadState(c, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, want, s)
	}
	return c, d
}

// expectClosed reads until the server closes, returning what it sent.
func expectClosed(t *testing.T, c net.Conn) []byte {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		assert.NotContains(t, err.Error(), "timeout", "server did not close the connection")
	}
	return b
}

// hookedServer starts a server on loopback whose failure hook feeds the
// returned channel.
func hookedServer(t *testing.T, cfg ServerConfig) (string, *Server, <-chan *SessionError) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return hookedServerOn(t, ln, cfg)
}

// hookedServerOn serves ln with a server whose failure hook feeds the
// returned channel; the server stops, and must return nil, when the test ends.
func hookedServerOn(t *testing.T, ln net.Listener, cfg ServerConfig) (string, *Server, <-chan *SessionError) {
	t.Helper()
	errs := make(chan *SessionError, 256)
	cfg.OnFailure = func(_ net.Addr, err error) {
		e := asSession(err)
		errs <- e
	}
	srv, err := NewServer(&cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled, "Serve returns ctx.Err()")
	})
	return ln.Addr().String(), srv, errs
}

// expectReason waits for a session error with reason r (others are skipped)
// and checks the counter moved.
func expectReason(t *testing.T, srv *Server, errs <-chan *SessionError, r reason) {
	t.Helper()
	e := expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == r })
	require.Error(t, e.Err)
	require.NotNil(t, e.Remote)
	assert.Positive(t, srv.Stats().Failed[r])
}

// expectFailure waits up to 10 s for a session error that match accepts,
// logging and skipping the others.
func expectFailure(t *testing.T, errs <-chan *SessionError, match func(*SessionError) bool) *SessionError {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-errs:
			t.Logf("session error: %v", e)
			if match(e) {
				return e
			}
		case <-timeout:
			t.Fatalf("no matching session error reached the hook")
		}
	}
}

func TestServerHostilePeers(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{HandshakeTimeout: 2 * time.Second, MaxTests: 8})
	t.Cleanup(func() {
		// The server counts a test once it has read the client's IPERF_DONE,
		// a moment after the client returned.
		assert.Eventually(t, func() bool { return srv.Stats().Completed == 5 }, 5*time.Second, 10*time.Millisecond,
			"the good runs completed")
		st := srv.Stats()
		t.Logf("stats: %+v", st)
		assert.Greater(t, st.Started, st.Completed)
	})

	t.Run("silent", func(t *testing.T) {
		c := dialRaw(t, addr)
		good := goodRun(t, addr)
		require.NoError(t, <-good, "a silent connection must not block another client")
		assert.Empty(t, expectClosed(t, c))
		expectReason(t, srv, errs, reasonTimeout)
	})
	t.Run("silent-during-stream-setup", func(t *testing.T) {
		// The iperf3 hazard: a stray connection while a test creates streams.
		good := goodRun(t, addr)
		for i := 0; i < 5; i++ {
			dialRaw(t, addr)
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, <-good)
	})
	t.Run("zero-json-length", func(t *testing.T) {
		c, _ := rawHandshake(t, addr)
		_, err := c.Write([]byte{0, 0, 0, 0})
		require.NoError(t, err)
		b := expectClosed(t, c)
		require.NotEmpty(t, b)
		assert.Equal(t, byte(0xfe), b[0], "SERVER_ERROR")
		expectReason(t, srv, errs, reasonBadParams)
	})
	t.Run("huge-json-length", func(t *testing.T) {
		c, _ := rawHandshake(t, addr)
		_, err := c.Write([]byte{0xff, 0xff, 0xff, 0xf0})
		require.NoError(t, err)
		b := expectClosed(t, c)
		require.NotEmpty(t, b)
		assert.Equal(t, byte(0xfe), b[0])
		expectReason(t, srv, errs, reasonBadParams)
	})
	t.Run("garbage-json", func(t *testing.T) {
		c, _ := rawHandshake(t, addr)
		require.NoError(t, iperfwire.WriteJSON(c, []byte("{nope"), time.Second))
		b := expectClosed(t, c)
		require.NotEmpty(t, b)
		assert.Equal(t, byte(0xfe), b[0])
		expectReason(t, srv, errs, reasonBadParams)
	})
	t.Run("wrong-cookie-stream", func(t *testing.T) {
		// A data stream with an unknown cookie is taken for a new test and
		// never joins the running one.
		good := goodRun(t, addr)
		c := dialRaw(t, addr)
		_, err := c.Write([]byte(strings.Repeat("x", 36) + "\x00"))
		require.NoError(t, err)
		require.NoError(t, <-good)
		b := expectClosed(t, c)
		require.NotEmpty(t, b)
		assert.Equal(t, byte(iperfwire.ParamExchange), b[0])
		expectReason(t, srv, errs, reasonTimeout)
	})
	t.Run("garbage-state-and-vanish", func(t *testing.T) {
		good := goodRun(t, addr)
		c, d := rawRunning(t, addr, `{"tcp":true,"time":30,"parallel":1,"len":1000}`)
		_, err := c.Write([]byte{0x07, 0x42})
		require.NoError(t, err)
		expectClosed(t, c)
		expectClosed(t, d)
		require.NoError(t, <-good)
		expectReason(t, srv, errs, reasonProtocol)
	})
	t.Run("client-vanishes-mid-test", func(t *testing.T) {
		good := goodRun(t, addr)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		_, err := Run(ctx, addr, &Config{Duration: 5 * time.Second, Reverse: true})
		require.ErrorIs(t, err, context.Canceled)
		require.NoError(t, <-good)
		expectReason(t, srv, errs, reasonPeerGone)
	})
	t.Run("params-too-large", func(t *testing.T) {
		// Run refuses such a Title itself (TestAPIMisuse); a stock client
		// sends it.
		c, _ := rawHandshake(t, addr)
		params := `{"tcp":true,"time":1,"parallel":1,"title":"` + strings.Repeat("t", 9000) + `"}`
		require.NoError(t, iperfwire.WriteJSON(c, []byte(params), time.Second))
		s, err := iperfwire.ReadState(c, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, iperfwire.ServerError, s)
		ie, _, err := iperfwire.ReadServerError(c, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, iperfwire.IErrRecvParams, ie)
		expectReason(t, srv, errs, reasonBadParams)
	})
}

func TestServerLimits(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{MaxTests: 4, MaxStreams: 4, MaxDuration: 3 * time.Second, MaxBitrate: 100e6})
	t.Cleanup(func() {
		assert.Equal(t, int64(5), srv.Stats().Failed[reasonLimit], "one per refused test")
		assert.Len(t, errs, 5)
		for e := range len(errs) {
			_ = e
			assert.ErrorIs(t, (<-errs).Err, ErrLimit)
		}
	})
	ctx := ctxT(t, 30*time.Second)
	_, err := Run(ctx, addr, &Config{Duration: time.Second, Streams: 5})
	assert.ErrorIs(t, err, ErrServerError)
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, iperfwire.IErrNumStreams, se.IErrno)
	_, err = Run(ctx, addr, &Config{Duration: time.Second, Streams: 3, Bidir: true})
	assert.ErrorIs(t, err, ErrServerError, "bidir streams count twice")
	_, err = Run(ctx, addr, &Config{Duration: 5 * time.Second})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, iperfwire.IErrDuration, se.IErrno)
	_, err = Run(ctx, addr, &Config{Duration: time.Second, Bitrate: 200e6})
	assert.ErrorIs(t, err, ErrServerError)
	_, err = Run(ctx, addr, &Config{Duration: time.Second, UDP: true, Bitrate: Unlimited})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, iperfwire.IErrTotalRate, se.IErrno)

	// One test at a time: the second client is denied, as by iperf3. (The
	// first retries: on a shared machine a stray connection from another
	// program may hold the only slot for a moment.)
	addr1, _ := startServer(t, &ServerConfig{MaxTests: 1})
	first := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := runRetry(t, addr1, &Config{Duration: time.Second, Bitrate: 50e6, Interval: 100 * time.Millisecond,
			OnInterval: func(Interval) {
				select {
				case <-started:
				default:
					close(started)
				}
			}})
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("first test ended early: %v", err)
	}
	_, err = Run(ctx, addr1, &Config{Duration: time.Second, Bitrate: 50e6})
	assert.ErrorIs(t, err, ErrAccessDenied)
	require.NoError(t, <-first)
}

// TestServeStopsWithoutLeaks stops a server with a test running and a
// silent connection open: no goroutine outlives Serve, with the streams
// on the poller or on stream threads.
func TestServeStopsWithoutLeaks(t *testing.T) {
	for _, threads := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "threads"}[threads], func(t *testing.T) {
			testServeStopsWithoutLeaks(t, threads)
		})
	}
}

// testServeStopsWithoutLeaks: with stream threads, GOMAXPROCS is back too.
func testServeStopsWithoutLeaks(t *testing.T, threads bool) {
	before, procs := runtime.NumGoroutine(), runtime.GOMAXPROCS(0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv, err := NewServer(&ServerConfig{SocketOptions: SocketOptions{StreamThreads: threads}})
	require.NoError(t, err)
	go func() { done <- srv.Serve(ctx, ln) }()
	addr := ln.Addr().String()
	_, err = Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 500 * time.Millisecond, Bidir: true})
	require.NoError(t, err)
	_, err = Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 500 * time.Millisecond, UDP: true, Reverse: true})
	require.NoError(t, err)
	// A test in progress and a silent connection when the server stops.
	silent, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer silent.Close()
	running := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), addr, &Config{Duration: 20 * time.Second})
		running <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	select {
	case err := <-running:
		require.Error(t, err, "the running test learns that the server stopped")
	case <-time.After(15 * time.Second):
		t.Fatal("client did not notice the server stopping")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
	assert.Equal(t, procs, runtime.GOMAXPROCS(0), "the stream threads' Ps are given back")
}

// TestCheckParamsBoundsBeforeArithmetic feeds values that used to wrap the
// server's limit arithmetic: 2^62 bidirectional streams wrapped the stream
// count negative (and the server then ran out of memory making 2^62 stream
// slots), and a time of 9.3e9 s wrapped the duration negative.
func TestCheckParamsBoundsBeforeArithmetic(t *testing.T) {
	sc, err := (&ServerConfig{}).withDefaults()
	require.NoError(t, err)
	cases := []struct {
		name string
		p    iperfwire.Params
		code int
	}{
		{"bidir streams wrap", iperfwire.Params{Parallel: 1 << 62, Bidirectional: true, Time: 1}, iperfwire.IErrNumStreams},
		{"streams past int64", iperfwire.Params{Parallel: -1 << 63, Time: 1}, iperfwire.IErrNumStreams},
		{"bidir doubles past the limit", iperfwire.Params{Parallel: 65, Bidirectional: true, Time: 1}, iperfwire.IErrNumStreams},
		{"time wraps the duration", iperfwire.Params{Parallel: 1, Time: 9_300_000_000}, iperfwire.IErrDuration},
		{"time plus omit wraps", iperfwire.Params{Parallel: 1, Time: 1<<63 - 1, Omit: 600}, iperfwire.IErrDuration},
		{"block above iperf3's 1 MiB", iperfwire.Params{Parallel: 128, Reverse: true, Time: 1, Len: 16 << 20}, iperfwire.IErrBlockSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, err := checkParams(&sc, &c.p)
			require.ErrorIs(t, err, ErrLimit)
			assert.Equal(t, c.code, code)
		})
	}
	code, err := checkParams(&sc, &iperfwire.Params{Parallel: 64, Bidirectional: true, Time: 3600, Len: 1 << 20})
	require.NoError(t, err, "the largest legal test")
	assert.Zero(t, code)
}

// TestServerSilentAfterStreamsEnd: a client closes its data stream and then
// never sends TEST_END, keeping its control connection open. The test's
// slot must come free at the hard limit (MaxDuration + IOTimeout), not be
// held until the server stops. The limit applies to the good run after
// it too, whose 1 s test must end within it however loaded the machine:
// 4 s of MaxDuration leave it 3.5 s for its set-up and results.
func TestServerSilentAfterStreamsEnd(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{MaxDuration: 4 * time.Second, IOTimeout: 500 * time.Millisecond})
	_, d := rawRunning(t, addr, `{"tcp":true,"time":1,"parallel":1,"len":1024}`)
	require.NoError(t, d.Close())
	e := expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonLimit })
	assert.ErrorIs(t, e.Err, ErrLimit)
	assert.Zero(t, srv.Stats().Completed)
	goodRunDone := goodRun(t, addr)
	require.NoError(t, <-goodRunDone, "the server still serves")
}

// TestServerClientLeavesDuringStreams: a stock client that cannot connect
// a stream (its --cport taken) sends IPERF_DONE, shuts its side and waits
// for the server to close. The server must close at once, not when the
// handshake timeout ends.
func TestServerClientLeavesDuringStreams(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{HandshakeTimeout: 30 * time.Second})
	for _, params := range []string{`{"tcp":true,"time":1,"parallel":2,"len":1024}`, `{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":1000000}`} {
		c, cookie := rawHandshake(t, addr)
		require.NoError(t, iperfwire.WriteJSON(c, []byte(params), time.Second))
		s, err := iperfwire.ReadState(c, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, iperfwire.CreateStreams, s)
		if strings.Contains(params, "tcp") {
			d := dialRaw(t, addr) // one of two streams connects
			_, err = d.Write(cookie)
			require.NoError(t, err)
		}
		require.NoError(t, iperfwire.WriteState(c, iperfwire.IperfDone, time.Second))
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
		start := time.Now()
		expectClosed(t, c)
		assert.Less(t, time.Since(start), 10*time.Second, "closed long before the 30 s handshake timeout")
		e := expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonPeerGone })
		assert.ErrorContains(t, e.Err, "while its streams connected")
	}
	require.NoError(t, <-goodRun(t, addr), "the server still serves")
	assert.Equal(t, int64(2), srv.Stats().Failed[reasonPeerGone])
}

// asSession is OnFailure's error as the *SessionError it always is.
func asSession(err error) *SessionError {
	var se *SessionError
	if !errors.As(err, &se) {
		panic(fmt.Sprintf("OnFailure got %T, not a *SessionError", err))
	}
	return se
}
