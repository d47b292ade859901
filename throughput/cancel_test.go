package throughput

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelBound is how long a cancelled call may take to return in these
// tests. The requirement is 100 ms, which a loaded 2-core machine under
// -race cannot promise; what a test can show is the mechanism: the calls
// run with timeouts of a minute (cancelTimeouts), so a return within a few
// seconds comes from the cancel closing the connections, never from a
// deadline. Each test logs how long the return took.
const cancelBound = 3 * time.Second

// cancelTimeouts gives cfg timeouts far above cancelBound, unless it has
// its own.
func cancelTimeouts(cfg *Config) {
	if cfg.IOTimeout == 0 {
		cfg.IOTimeout = time.Minute
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = time.Minute
	}
}

// runAndCancel runs cfg against addr, cancels when cancelAt fires (a
// channel closed by the peer when it reaches the phase under test) and
// returns the result, how long Run took after the cancel and the error.
func runAndCancel(t *testing.T, addr string, cfg *Config, cancelAt <-chan struct{}) (*Result, time.Duration, error) {
	t.Helper()
	cancelTimeouts(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res *Result
		err error
		at  time.Time
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(ctx, addr, cfg)
		done <- out{res, err, time.Now()}
	}()
	select {
	case <-cancelAt:
	case o := <-done:
		t.Fatalf("Run returned before the phase under test: %v", o.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the phase under test never came")
	}
	cancelled := time.Now()
	cancel()
	select {
	case o := <-done:
		took := o.at.Sub(cancelled)
		t.Logf("Run returned %v after cancel: %v", took, o.err)
		return o.res, took, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("Run ignored the cancel")
	}
	return nil, 0, nil
}

// stallingPeer is an iperf3 server that follows the protocol up to phase
// and then stops answering (it keeps its connections open), closing reached
// when it gets there.
type stallingPeer struct {
	ln      net.Listener
	phase   string
	reached chan struct{}
	once    sync.Once
}

func newStallingPeer(t *testing.T, phase string) *stallingPeer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallingPeer{ln: ln, phase: phase, reached: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctrl, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conns = append(conns, ctrl)
		mu.Unlock()
		p.serve(ctrl, func(c net.Conn) {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		})
	}()
	return p
}

func (p *stallingPeer) stall(phase string) bool {
	if p.phase != phase {
		return false
	}
	p.once.Do(func() { close(p.reached) })
	return true
}

// serve plays the server's side of one TCP test with one stream.
func (p *stallingPeer) serve(ctrl net.Conn, keep func(net.Conn)) {
	if p.stall("connect") {
		return
	}
	cookie := make([]byte, iperfwire.CookieLen)
	if _, err := io.ReadFull(ctrl, cookie); err != nil || p.stall("cookie") {
		return
	}
	if iperfwire.WriteState(ctrl, iperfwire.ParamExchange, time.Second) != nil {
		return
	}
	if _, err := iperfwire.ReadJSON(ctrl, 1<<20, 0); err != nil || p.stall("params") {
		return
	}
	if iperfwire.WriteState(ctrl, iperfwire.CreateStreams, time.Second) != nil {
		return
	}
	data, err := p.ln.Accept()
	if err != nil {
		return
	}
	keep(data)
	flowing, gone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		b := make([]byte, 64<<10)
		if _, err := io.ReadFull(data, b); err == nil {
			close(flowing)
		}
		_, _ = io.Copy(io.Discard, data)
	}()
	if p.stall("streams") {
		return
	}
	_ = iperfwire.WriteState(ctrl, iperfwire.TestStart, time.Second)
	_ = iperfwire.WriteState(ctrl, iperfwire.TestRunning, time.Second)
	// A stream that ends before 64 KiB (or is closed by the cleanup) ends
	// the peer instead of leaving it blocked.
	select {
	case <-flowing:
	case <-gone:
		select {
		case <-flowing:
		default:
			return
		}
	}
	if p.stall("running") {
		return
	}
	if p.phase == "early" {
		// EXCHANGE_RESULTS before the client's TEST_END: the client takes
		// it as the end of the test and sends its results straight away,
		// as a 3.21 client does, and must then not wait for a second
		// state that never comes.
		_ = iperfwire.WriteState(ctrl, iperfwire.ExchangeResults, time.Second)
		if _, err := iperfwire.ReadJSON(ctrl, 1<<20, 0); err == nil {
			p.stall("early")
		}
		return
	}
	if s, err := iperfwire.ReadState(ctrl, 0); err != nil || s != iperfwire.TestEnd {
		return
	}
	_ = iperfwire.WriteState(ctrl, iperfwire.ExchangeResults, time.Second)
	if _, err := iperfwire.ReadJSON(ctrl, 1<<20, 0); err != nil || p.stall("results") {
		return
	}
	res, _ := json.Marshal(iperfwire.Results{CPUUtilTotal: iperfwire.PtrFloat(1), CPUUtilUser: iperfwire.PtrFloat(1),
		CPUUtilSystem: iperfwire.PtrFloat(0), SenderHasRetransmits: iperfwire.PtrInt(-1), Streams: []iperfwire.Stream{}})
	_ = iperfwire.WriteJSON(ctrl, res, time.Second)
	p.stall("display")
}

// TestRunCancelEveryPhase cancels Run in each phase against a peer that
// stops answering there, and checks that Run returns at once with the
// partial result and the context's error; with the stream sent through the
// poller and on a stream thread (which the stalled peer leaves asleep in
// a full socket's write).
func TestRunCancelEveryPhase(t *testing.T) {
	for _, threads := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "threads"}[threads], func(t *testing.T) {
			testRunCancelEveryPhase(t, threads)
		})
	}
}

func testRunCancelEveryPhase(t *testing.T, threads bool) {
	for _, phase := range []string{"connect", "cookie", "params", "streams", "running", "early", "results", "display"} {
		t.Run(phase, func(t *testing.T) {
			p := newStallingPeer(t, phase)
			// The test ends on a byte count, beyond the 64 KiB the peer waits
			// for before it goes on: a timed one may move nothing on a
			// loaded machine.
			cfg := &Config{Bytes: 1 << 20, Bitrate: 100e6, Interval: 100 * time.Millisecond, SocketOptions: SocketOptions{StreamThreads: threads}}
			if phase == "running" || phase == "early" {
				cfg.Bytes, cfg.Duration = 0, time.Minute // only the peer ends it
			}
			reached := p.reached
			if phase == "running" {
				// Unpaced, and cancelled a while after the peer stopped
				// reading: the socket is full and the write asleep.
				cfg.Bitrate = Unlimited
				later := make(chan struct{})
				go func() {
					<-p.reached
					time.Sleep(300 * time.Millisecond)
					close(later)
				}()
				reached = later
			}
			res, took, err := runAndCancel(t, p.ln.Addr().String(), cfg, reached)
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, took, cancelBound)
			require.NotNil(t, res, "the partial result, never nil")
			assert.Equal(t, "client", res.Role)
			assert.Equal(t, 1, res.Config.Streams)
			if phase == "connect" && res.RemoteAddr == "" {
				assert.Nil(t, res.Upload, "cancelled before the dial returned: nothing to report")
				return
			}
			assert.NotEmpty(t, res.RemoteAddr)
			switch phase {
			case "running", "early", "results", "display":
				require.NotNil(t, res.Upload, "counts from the streams that ran")
				assert.Greater(t, res.Upload.Sent.Bytes, int64(0))
			case "connect", "cookie", "params":
				assert.Nil(t, res.Upload)
			}
		})
	}
}

// TestRunCancelStockServer cancels a running test against stock iperf3
// servers; the server must then be free for the next client.
func TestRunCancelStockServer(t *testing.T) {
	for _, v := range []struct {
		name string
		bin  func(testing.TB) string
	}{{"3.12", func(tb testing.TB) string { return startIperf3Server(tb) }}, {"3.21", func(tb testing.TB) string {
		return startIperf3ServerBin(tb, peertest.NewIPerf3(tb))
	}}} {
		t.Run(v.name, func(t *testing.T) {
			addr := v.bin(t)
			running := make(chan struct{})
			var once sync.Once
			cfg := &Config{Duration: time.Minute, Interval: 100 * time.Millisecond,
				OnInterval: func(iv Interval) {
					if iv.Upload != nil && iv.Upload.Bytes > 0 {
						once.Do(func() { close(running) })
					}
				}}
			res, took, err := runAndCancel(t, addr, cfg, running)
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, took, cancelBound)
			require.NotNil(t, res)
			require.NotNil(t, res.Upload)
			assert.Greater(t, res.Upload.Sent.Bytes, int64(0))
			assert.NotEmpty(t, res.Intervals)
			// The stock server heard CLIENT_TERMINATE (or the close) and takes
			// the next test once it has reset itself (3.12 closes and reopens
			// its listener, resetting connections that arrive meanwhile).
			_, err = runRetry(t, addr, &Config{Duration: 300 * time.Millisecond, Interval: -1})
			require.NoError(t, err)
		})
	}
}

// TestServeCancelEveryPhase stops a server while clients sit in each phase
// of a test (cookie, params, stream set-up, running, results exchange);
// Serve must return at once and report each as canceled.
func TestServeCancelEveryPhase(t *testing.T) {
	for _, threads := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "threads"}[threads], func(t *testing.T) {
			testServeCancelEveryPhase(t, threads)
		})
	}
}

func testServeCancelEveryPhase(t *testing.T, threads bool) {
	var mu sync.Mutex
	reasons := map[reason]int{}
	srv, err := NewServer(&ServerConfig{MaxTests: 8, OnFailure: func(_ net.Addr, err error) {
		e := asSession(err)

		mu.Lock()
		reasons[e.Reason]++
		mu.Unlock()
	}, SocketOptions: SocketOptions{StreamThreads: threads}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	dialRaw(t, addr)              // silent: the cookie phase
	c, _ := rawHandshake(t, addr) // the params phase
	d, _ := rawHandshake(t, addr) // the streams phase
	require.NoError(t, iperfwire.WriteJSON(d, []byte(`{"tcp":true,"time":30,"parallel":1,"len":1000}`), time.Second))
	s, err := iperfwire.ReadState(d, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.CreateStreams, s)
	// The results phase: the test ran, the client never sends its results.
	e, cookie := rawHandshake(t, addr)
	require.NoError(t, iperfwire.WriteJSON(e, []byte(`{"tcp":true,"time":1,"parallel":1,"len":1000}`), time.Second))
	s, err = iperfwire.ReadState(e, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.CreateStreams, s)
	data := dialRaw(t, addr)
	_, err = data.Write(cookie)
	require.NoError(t, err)
	for _, want := range []iperfwire.State{iperfwire.TestStart, iperfwire.TestRunning} {
		s, err = iperfwire.ReadState(e, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, want, s)
	}
	require.NoError(t, iperfwire.WriteState(e, iperfwire.TestEnd, time.Second))
	s, err = iperfwire.ReadState(e, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.ExchangeResults, s)

	running := make(chan struct{})
	var once sync.Once
	client := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), addr, &Config{Duration: time.Minute, Interval: 100 * time.Millisecond,
			OnInterval: func(Interval) { once.Do(func() { close(running) }) }})
		client <- err
	}()
	<-running
	require.Eventually(t, func() bool { return srv.Stats().Started >= 4 }, 5*time.Second, 10*time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		require.ErrorIs(t, err, context.Canceled, "Serve returns ctx.Err()")
	case <-time.After(10 * time.Second):
		t.Fatal("Serve ignored the cancel")
	}
	took := time.Since(start)
	t.Logf("Serve returned %v after cancel", took)
	assert.Less(t, took, cancelBound)
	require.Error(t, <-client, "the running client learns that the server stopped")
	expectClosed(t, c)
	b := expectClosed(t, e)
	assert.Equal(t, []byte{byte(int8(iperfwire.ServerTerminate))}, b, "the server says it stops")
	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, reasons[reasonCanceled], 5, "%v", reasons)
	assert.Equal(t, int64(reasons[reasonCanceled]), srv.Stats().Failed[reasonCanceled])
}

// TestServeUnixListener serves on a unix socket: TCP-shaped control works,
// a UDP test is refused with SERVER_ERROR and a reason, and nothing panics.
func TestServeUnixListener(t *testing.T) {
	path := t.TempDir() + "/iperf.sock"
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	_, srv, got := hookedServerOn(t, ln, ServerConfig{})

	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	cookie, err := iperfwire.NewCookie()
	require.NoError(t, err)
	_, err = c.Write(cookie)
	require.NoError(t, err)
	s, err := iperfwire.ReadState(c, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.ParamExchange, s)
	require.NoError(t, iperfwire.WriteJSON(c, []byte(`{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":1000000}`), time.Second))
	s, err = iperfwire.ReadState(c, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, iperfwire.ServerError, s)
	ie, _, err := iperfwire.ReadServerError(c, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, iperfwire.IErrListen, ie)
	select {
	case e := <-got:
		assert.Equal(t, reasonUnsupported, e.Reason)
		assert.ErrorContains(t, e.Err, "udp tests need a TCP listener")
	case <-time.After(5 * time.Second):
		t.Fatal("the refusal did not reach the hook")
	}
	assert.Equal(t, int64(1), srv.Stats().Failed[reasonUnsupported])
}

// TestListenAndServe reports the bound address through OnListen and stops
// with its context.
func TestListenAndServe(t *testing.T) {
	bound := make(chan net.Addr, 1)
	srv, err := NewServer(&ServerConfig{OnListen: func(a net.Addr) { bound <- a }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe(ctx, "tcp", "127.0.0.1:0") }()
	var addr net.Addr
	select {
	case addr = <-bound:
	case err := <-served:
		t.Fatalf("ListenAndServe: %v", err)
	}
	// A test that ends on a count moves it however slowly a loaded machine
	// runs (a timed one may move nothing).
	res, err := Run(ctxT(t, 10*time.Second), addr.String(), &Config{Bytes: 1 << 20, Interval: -1})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Upload.Sent.Bytes, int64(1<<20))
	require.Eventually(t, func() bool { return srv.Stats().Completed == 1 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-served, context.Canceled, "Serve returns ctx.Err()")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	assert.Error(t, srv.ListenAndServe(context.Background(), "tcp", busy.Addr().String()), "the port is taken")
}

func TestNewServerInvalid(t *testing.T) {
	for _, c := range []ServerConfig{{MaxTests: -1}, {MaxDuration: -time.Second}, {MaxStreams: maxStreams + 1}, {IOTimeout: -1}} {
		_, err := NewServer(&c)
		assert.Error(t, err, "%+v", c)
	}
	_, err := NewServer(nil)
	assert.NoError(t, err)
}
