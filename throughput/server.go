package throughput

import (
	"context"
	"errors"
	"fmt"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/internal/allowlist"

	"github.com/netperfkit/netperfkit/internal/iperfauth"
	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// Server limits' defaults.
const (
	defaultMaxTests         = 4
	defaultMaxDuration      = time.Hour
	defaultHandshakeTimeout = 10 * time.Second
	maxParamsBytes          = 8 << 10 // iperf3's limit on the parameters JSON
	// maxTCPBlockLen is iperf3's MAX_BLOCKSIZE: each sending stream holds
	// a block, so 128 streams of it cost 128 MiB.
	maxTCPBlockLen = 1 << 20
	maxOmitSecs    = 600
	// maxTimeSecs bounds a test's time before it is converted to a
	// Duration (100 years); MaxDuration is the real limit.
	maxTimeSecs = 100 * 365 * 24 * 3600
)

// ServerConfig sets a server's limits and hooks. A nil *ServerConfig means
// all defaults.
type ServerConfig struct {
	// MaxTests is how many tests may run at once; 0 means 4. Further
	// clients get ACCESS_DENIED, as from a busy iperf3 server.
	MaxTests int
	// MaxDuration caps a test's omit + time, and bounds tests that end by
	// bytes or blocks; 0 means 1 hour.
	MaxDuration time.Duration
	// MaxStreams caps parallel streams per test (both directions count);
	// 0 means 128, iperf3's limit.
	MaxStreams int
	// MaxBitrate caps the per-stream rate a client may ask for, in bits/s;
	// 0 means no cap. With a cap, unlimited-rate tests are refused.
	MaxBitrate float64
	// MaxTotalBitrate caps a test's total rate in bits/s, every stream in
	// both directions counted (iperf3 --server-bitrate-limit); 0 means no
	// cap. As in iperf3 3.21 it is checked twice, and a client is told with
	// SERVER_ERROR, iperf3's "total required bandwidth is larger than server
	// limit" (errno 0), while OnFailure gets reasonLimit and ErrTotalRate.
	// A test that asks for more (its per-stream rate times its streams,
	// doubled for --bidir; --fq-rate is not counted, as by 3.21) is
	// refused. A test that asks for no rate (TCP's default) is let in, as
	// by 3.21, and ended once its bytes average more over
	// TotalBitrateWindow: the window in whole report intervals (this
	// server's Interval, whatever a client asks for), at least
	// one, nothing judged before it has passed, the omit period counted;
	// unlike 3.21 the average is over the intervals' measured lengths. The
	// ended test's streams stay open until the client leaves (a second at
	// most), so that a 3.21 client reports the limit, not a failed write.
	MaxTotalBitrate float64
	// TotalBitrateWindow is the span MaxTotalBitrate averages a running
	// test over; 0 means 5 s, iperf3's default. Other values must lie
	// within iperf3's 0.1 to 60 s.
	TotalBitrateWindow time.Duration
	// HandshakeTimeout bounds each step before data flows (cookie, params,
	// stream set-up); 0 means 10 s.
	HandshakeTimeout time.Duration
	// IOTimeout bounds every other control read and write and every data
	// write; 0 means 10 s.
	IOTimeout time.Duration
	// RecvTimeout fails a running test whose streams this server receives
	// on when nothing arrives for so long (iperf3 --rcv-timeout); 0 means
	// 120 s, iperf3's default; negative disables it.
	RecvTimeout time.Duration
	// SocketOptions are the server side's socket settings; the server
	// honours six of them, the client chooses the rest for each test:
	//   - ReadLen: the size of each TCP receive read; 0 means 128 KiB, at
	//     most 1 MiB;
	//   - StreamThreads: Config.StreamThreads for every test's TCP streams
	//     (an OS thread each, GOMAXPROCS raised by their count; linux);
	//   - JitterRead: Config.JitterRead for every test's UDP receivers (the
	//     kernel's arrival times by default, the read's as iperf3's when set);
	//   - DisableFastPath: turns off UDP GSO/GRO on linux;
	//   - BindDevice: binds the server's sockets to this network interface
	//     (SO_BINDTODEVICE, iperf3 --bind-dev; linux, elsewhere NewServer
	//     fails with an error matching errors.ErrUnsupported): ListenAndServe's listener and every
	//     UDP test's sockets. Serve's listener is the caller's to bind;
	//   - MPTCP: ListenAndServe listens with Multipath TCP (iperf3 -m), so
	//     that MPTCP clients keep it; plain TCP clients connect as before.
	//     False leaves Go's default (which GODEBUG=multipathtcp sets).
	SocketOptions
	// Interval between the server's own interval reports (sent back with
	// get_server_output); 0 means 1 s, otherwise at least 10 ms. A
	// netperfkit client's interval wins.
	Interval time.Duration
	// OnListen, when set, is called by Serve and ListenAndServe with the
	// bound address before the first Accept (Addr returns it too).
	OnListen func(net.Addr)
	// OnResult, when set, receives the server's view of every finished
	// test. It is called from the test's goroutine and may run concurrently
	// for concurrent tests.
	OnResult func(Result)
	// OnFailure, when set, receives every refused or failed connection
	// and test: the peer's address (nil when unknown) and the error, a
	// *SessionError (errors.As) carrying its Reason; Stats counts them
	// too. It is called from the connection's goroutine, possibly
	// concurrently.
	OnFailure func(remote net.Addr, err error)

	// Authentication and protection (iperf3 3.21 parity, issue 11).

	// Auth, when set, requires every client to authenticate with iperf3's
	// RSA scheme; NewServer fails when its key or users file is unusable.
	Auth *iperf3auth.Server
	// AllowedClients, when not empty, lists the client networks served;
	// a connection from elsewhere gets ACCESS_DENIED before anything is
	// read, and reaches OnFailure with reasonDenied (ErrAccessDenied).
	// IPv4-mapped prefixes (::ffff:10.0.0.0/104) mean their IPv4 network,
	// as clients' mapped addresses are unmapped; an invalid prefix fails
	// NewServer.
	AllowedClients []netip.Prefix
	// MaxTestsPerClient caps one client IP's tests at once, counted from
	// accept: a connection that has not yet sent its cookie counts, so one
	// host cannot hold every slot with stalled handshakes (each held at
	// most HandshakeTimeout). The data streams of its tests get in. Extra
	// connections get ACCESS_DENIED and reach OnFailure with
	// reasonLimit (ErrLimit). 0 means no cap.
	MaxTestsPerClient int
	// OneOff makes Serve return nil after its first test, successful or
	// not, as iperf3 -1 does; clients refused before a test (busy, not
	// allowed, failed authentication) do not count. MaxTests is then 1.
	OneOff bool
	// IdleTimeout, when positive, makes Serve return nil once no
	// connection has been in progress for that long (iperf3 -1
	// --idle-timeout; without -1 iperf3 only restarts its one test slot,
	// which a Server never needs).
	IdleTimeout time.Duration
	// OnEvent, when set, receives every test's events (Event.Cookie tells
	// concurrent tests apart), from the test's goroutines: calls for one
	// test never overlap, calls for different tests may.
	OnEvent func(Event)
	// SendFrom and ReceiveTo are Config.SendFrom and Config.ReceiveTo for
	// every test's streams (iperf3 -s -F): the data the server's sending
	// streams carry (a reverse or bidirectional test's) and where its
	// receiving streams write. They are called from the test's goroutine,
	// concurrently for concurrent tests (MaxTests). The client ends the
	// test: a sending stream whose data has ended sends nothing more until
	// then, as iperf3's does. With either set, UDP tests are refused
	// (iperf3's "cannot transfer file using UDP", ErrLimit), and a
	// client's skip-rx-copy request is ignored.
	SendFrom  func(stream int) (io.Reader, error)
	ReceiveTo func(stream int) (io.Writer, error)
}

// negativeLimit names the first limit that is negative (or a NaN
// MaxTotalBitrate), "" when none is.
func (c *ServerConfig) negativeLimit() string {
	for _, l := range []struct {
		name string
		bad  bool
	}{
		{"MaxTests", c.MaxTests < 0}, {"MaxDuration", c.MaxDuration < 0}, {"MaxStreams", c.MaxStreams < 0},
		{"MaxBitrate", !(c.MaxBitrate >= 0)}, {"MaxTotalBitrate", !(c.MaxTotalBitrate >= 0)},
		{"HandshakeTimeout", c.HandshakeTimeout < 0}, {"IOTimeout", c.IOTimeout < 0}, {"ReadLen", c.ReadLen < 0},
		{"Interval", c.Interval < 0}, {"MaxTestsPerClient", c.MaxTestsPerClient < 0}, {"IdleTimeout", c.IdleTimeout < 0},
	} {
		if l.bad {
			return l.name
		}
	}
	return ""
}

func (c *ServerConfig) withDefaults() (ServerConfig, error) {
	var d ServerConfig
	if c != nil {
		d = *c
	}
	if name := d.negativeLimit(); name != "" {
		return d, fmt.Errorf("throughput: ServerConfig.%s is negative", name)
	}
	if w := d.TotalBitrateWindow; w != 0 && (w < minRateWindow || w > maxRateWindow) {
		return d, fmt.Errorf("throughput: ServerConfig.TotalBitrateWindow %v outside %v to %v", w, minRateWindow, maxRateWindow)
	}
	if d.BindDevice != "" && !bindDeviceAvailable {
		return d, fmt.Errorf("throughput: ServerConfig.BindDevice: %w", errNotAvailable)
	}
	if len(d.BindDevice) > maxIfaceName {
		return d, fmt.Errorf("throughput: ServerConfig.BindDevice %q: longer than %d bytes", d.BindDevice, maxIfaceName)
	}
	if d.ReadLen > maxTCPBlockLen {
		return d, fmt.Errorf("throughput: ServerConfig.ReadLen %d bytes above the maximum of %d bytes", d.ReadLen, maxTCPBlockLen)
	}
	if d.Interval > 0 && d.Interval < minInterval {
		return d, fmt.Errorf("throughput: ServerConfig.Interval %v below the minimum %v", d.Interval, minInterval)
	}
	if d.MaxStreams > maxStreams {
		return d, fmt.Errorf("throughput: ServerConfig.MaxStreams %d above %d", d.MaxStreams, maxStreams)
	}
	allowed, err := allowlist.Normalize(d.AllowedClients)
	if err != nil {
		return d, fmt.Errorf("throughput: server: %w", err)
	}
	d.AllowedClients = allowed
	def := func(v *time.Duration, x time.Duration) {
		if *v == 0 {
			*v = x
		}
	}
	if d.MaxTests == 0 {
		d.MaxTests = defaultMaxTests
	}
	if d.OneOff {
		d.MaxTests = 1
	}
	if d.MaxStreams == 0 {
		d.MaxStreams = maxStreams
	}
	def(&d.MaxDuration, defaultMaxDuration)
	def(&d.HandshakeTimeout, defaultHandshakeTimeout)
	def(&d.IOTimeout, defaultIOTimeout)
	def(&d.Interval, defaultInterval)
	def(&d.TotalBitrateWindow, defaultRateWindow)
	if d.ReadLen == 0 {
		d.ReadLen = defaultReadLen
	}
	return d, nil
}

// Server is an iperf3-compatible server: stock iperf3 clients and Run can
// test against it. Unlike iperf3 it runs up to MaxTests tests at once, and
// a silent, slow or malformed connection only ever holds its own goroutine
// (each step has a deadline). It is safe for concurrent use; one Server may
// serve several listeners.
//
// The zero Server is not usable: its methods return an error (Stats and
// Addr a zero value); make one with NewServer.
type Server struct {
	cfg   ServerConfig
	ready bool                     // made by NewServer
	addr  atomic.Pointer[net.Addr] // the listener Serve runs on
	auth  *iperfauth.Verifier      // nil: no authentication
	mu    sync.Mutex
	tests map[string]*serverTest // by cookie
	udpMu chanMutex              // one test at a time sets up UDP streams
	stats serverCounters
	// clients counts connections and tests per client IP (MaxTestsPerClient).
	clients perClient
}

// NewServer returns a server with cfg's limits (nil means defaults). It
// fails on a negative limit (or a NaN MaxTotalBitrate), MaxStreams above
// 128 or a TotalBitrateWindow outside 0.1 to 60 s.
func NewServer(cfg *ServerConfig) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	v, err := authVerifier(c.Auth)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: c, ready: true, auth: v, tests: map[string]*serverTest{}}, nil
}

// errZeroServer is what a zero Server's methods return.
var errZeroServer = errors.New("throughput: Server not made by NewServer")

// Addr returns the address of the listener the server serves on, nil
// before Serve or ListenAndServe has one (with several listeners, the
// latest).
func (s *Server) Addr() net.Addr {
	if s == nil {
		return nil
	}
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Serve accepts connections on ln and runs tests until ctx ends; it then
// closes ln, ends every test (each returns within 100 ms) and returns
// ctx.Err(). It returns nil when ServerConfig.OneOff or IdleTimeout ends
// it, and the accept error that stopped it otherwise. Any listener works:
// UDP tests need a TCP listener (their socket binds the same port) and
// are refused with SERVER_ERROR on others. A nil ln is an error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	switch {
	case s == nil || !s.ready:
		return errZeroServer
	case ln == nil:
		return errors.New("throughput: Serve: nil listener ln")
	case ctx == nil:
		return errors.New("throughput: Serve: nil ctx")
	}
	a := ln.Addr()
	s.addr.Store(&a)
	if s.cfg.OnListen != nil {
		s.cfg.OnListen(a)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	sv := &serving{ln: ln, stop: cancel, activity: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	defer func() {
		cancel() // an accept error ends the tests in progress too
		wg.Wait()
	}()
	if s.cfg.IdleTimeout > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sv.watchIdle(ctx, s.cfg.IdleTimeout)
		}()
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			if parent.Err() != nil {
				return parent.Err()
			}
			if ctx.Err() != nil {
				return nil // OneOff or IdleTimeout
			}
			if isTimeout(err) {
				continue
			}
			return fmt.Errorf("throughput: accept: %w", err)
		}
		sv.active.Add(1)
		sv.touch()
		seq := sv.accepted.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sv.touch()
			defer sv.active.Add(-1)
			s.handle(ctx, sv, acceptedConn{Conn: conn, seq: seq})
		}()
	}
}

// ListenAndServe listens on address (":5201" when empty) of network
// ("tcp", "tcp4", "tcp6" or "unix", as for net.Listen), reports the bound
// address to ServerConfig.OnListen, and serves as Serve.
func (s *Server) ListenAndServe(ctx context.Context, network, address string) error {
	switch {
	case s == nil || !s.ready:
		return errZeroServer
	case ctx == nil:
		return errors.New("throughput: ListenAndServe: nil ctx")
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return fmt.Errorf("throughput: ListenAndServe: network %q: want tcp, tcp4, tcp6 or unix", network)
	}
	if address == "" && network != "unix" {
		address = fmt.Sprintf(":%d", defaultPort)
	}
	var lc net.ListenConfig
	if s.cfg.MPTCP {
		lc.SetMultipathTCP(true) // false would also refuse Go's default
	}
	if dev := s.cfg.BindDevice; dev != "" {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = bindToDevice(fd, dev) }); err != nil {
				return err
			}
			return serr
		}
	}
	ln, err := lc.Listen(ctx, network, address)
	if err != nil {
		return fmt.Errorf("throughput: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// chanMutex is a mutex whose Lock can give up when a context ends.
type chanMutex struct {
	once sync.Once
	ch   chan struct{}
}

func (m *chanMutex) lock(ctx context.Context) error {
	m.once.Do(func() { m.ch = make(chan struct{}, 1) })
	select {
	case m.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *chanMutex) unlock() { <-m.ch }

// serverTest is a test between its control connection and its data streams.
type serverTest struct {
	streams   chan acceptedConn // TCP data streams handed over by the acceptor
	accepting bool              // under Server.mu
}

// acceptedConn is a connection numbered in the order Accept returned it.
// Each connection reads its cookie in its own goroutine, so streams can
// reach their test out of order; a test sorts them back by seq, because
// iperf3 gives a stream its role (sending or receiving, in --bidir) by the
// order in which it connected.
type acceptedConn struct {
	net.Conn
	seq uint64
}

// handle reads a new connection's cookie and routes it: to a test that is
// waiting for data streams, or to a new test.
func (s *Server) handle(ctx context.Context, sv *serving, ac acceptedConn) {
	conn := ac.Conn
	release, r, err := s.admit(conn)
	if err != nil {
		refuse(conn)
		s.failed(conn, r, err)
		return
	}
	defer release()
	cookie := make([]byte, iperfwire.CookieLen)
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	// A silent connection must not hold Serve up when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	_, err = io.ReadFull(conn, cookie)
	if !stop() {
		_ = conn.Close()
		s.failed(conn, reasonCanceled, fmt.Errorf("throughput: reading cookie: %w", ctx.Err()))
		return
	}
	if err != nil {
		_ = conn.Close()
		s.failed(conn, "", fmt.Errorf("throughput: reading cookie: %w", err))
		return
	}
	key := string(cookie)
	s.mu.Lock()
	t, known := s.tests[key]
	s.mu.Unlock()
	if known {
		release() // a data stream is not a test of its own
		s.joinTest(t, ac)
		return
	}
	t, err = s.newTest(key)
	if err != nil {
		_ = iperfwire.WriteState(conn, iperfwire.AccessDenied, time.Second)
		_ = conn.Close()
		s.failed(conn, reasonLimit, err)
		return
	}
	// free gives the test's slot back (idempotent): at the latest when it
	// ends, and before a refusal reaches the client, whose next test must
	// not find its own refused one still running.
	var once sync.Once
	free := func() { once.Do(func() { s.endTest(key, t); release() }) }
	defer free()
	s.runTest(ctx, sv, conn, cookie, t, free)
}

// joinTest hands a data connection to its test. The hand-off happens under
// s.mu, where stopAccepting closes the door, so no connection is left in
// the channel of a test that no longer reads it.
func (s *Server) joinTest(t *serverTest, conn acceptedConn) {
	s.mu.Lock()
	ok := t.accepting
	if ok {
		select {
		case t.streams <- conn:
		default:
			ok = false // more streams than any test takes
		}
	}
	s.mu.Unlock()
	if !ok {
		_ = iperfwire.WriteState(conn, iperfwire.AccessDenied, time.Second)
		_ = conn.Close()
		s.failed(conn, reasonBadCookie, fmt.Errorf("%w: a stream for a test that is not accepting streams", ErrProtocol))
	}
}

func (s *Server) newTest(key string) (*serverTest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tests) >= s.cfg.MaxTests {
		return nil, fmt.Errorf("%w: %d tests running, MaxTests %d", ErrLimit, len(s.tests), s.cfg.MaxTests)
	}
	t := &serverTest{streams: make(chan acceptedConn, 2*maxStreams)}
	s.tests[key] = t
	return t, nil
}

// endTest forgets a test.
func (s *Server) endTest(key string, t *serverTest) {
	s.stopAccepting(t)
	s.mu.Lock()
	delete(s.tests, key)
	s.mu.Unlock()
}

// startAccepting lets data connections with t's cookie join t.
func (s *Server) startAccepting(t *serverTest) {
	s.mu.Lock()
	t.accepting = true
	s.mu.Unlock()
}

// stopAccepting refuses t's further data connections and closes those that
// arrived but were not taken (more than the test asked for).
func (s *Server) stopAccepting(t *serverTest) {
	s.mu.Lock()
	t.accepting = false
	s.mu.Unlock()
	for {
		select {
		case c := <-t.streams:
			_ = c.Close()
		default:
			return
		}
	}
}

// runTest runs one test on its control connection and reports the outcome.
func (s *Server) runTest(ctx context.Context, sv *serving, conn net.Conn, cookie []byte, t *serverTest, free func()) {
	s.stats.started.Add(1)
	ss := &serverSession{session: session{server: true, ctrl: conn, cookie: cookie}, srv: s, ln: sv.ln, test: t, free: free}
	res, err := ss.run(ctx, ss)
	if err != nil {
		if ss.counted {
			s.stats.completed.Add(-1)
		}
		r := ss.reason(ctx, err)
		s.failed(conn, r, err)
		if s.cfg.OneOff && r != reasonDenied {
			sv.stop()
		}
		return
	}
	if s.cfg.OneOff {
		defer sv.stop()
	}
	if s.cfg.OnResult != nil {
		s.cfg.OnResult(*res)
	}
}
