package throughput

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// ServerConfig sets a server's limits. A nil *ServerConfig means all defaults.
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
	// MaxParamsBytes caps the parameters JSON; 0 means 8 KiB as in iperf3.
	MaxParamsBytes int
	// MaxResultsBytes caps the client's results JSON; 0 means 4 MiB.
	MaxResultsBytes int
	// HandshakeTimeout bounds each step before data flows (cookie, params,
	// stream set-up); 0 means 10 s.
	HandshakeTimeout time.Duration
	// IOTimeout bounds every other control read and write and every data
	// write; 0 means 10 s.
	IOTimeout time.Duration
	// ReadLen is the size of each TCP receive read; 0 means DefaultReadLen.
	ReadLen int
	// Interval between the server's own interval reports (sent back with
	// get_server_output); 0 means 1 s.
	Interval time.Duration
	// OnResult, when set, receives the server's view of every finished
	// test. It is called from the test's goroutine and may run concurrently
	// for concurrent tests.
	OnResult func(*Result)
	// DisableFastPath turns off UDP GSO/GRO on linux.
	DisableFastPath bool
}

func (c *ServerConfig) withDefaults() ServerConfig {
	var d ServerConfig
	if c != nil {
		d = *c
	}
	if d.MaxTests <= 0 {
		d.MaxTests = 4
	}
	if d.MaxDuration <= 0 {
		d.MaxDuration = time.Hour
	}
	if d.MaxStreams <= 0 || d.MaxStreams > MaxStreams {
		d.MaxStreams = MaxStreams
	}
	if d.MaxParamsBytes <= 0 {
		d.MaxParamsBytes = DefaultMaxParamsBytes
	}
	if d.MaxResultsBytes <= 0 {
		d.MaxResultsBytes = DefaultMaxResultsBytes
	}
	if d.HandshakeTimeout <= 0 {
		d.HandshakeTimeout = 10 * time.Second
	}
	if d.IOTimeout <= 0 {
		d.IOTimeout = 10 * time.Second
	}
	if d.Interval <= 0 {
		d.Interval = time.Second
	}
	return d
}

// i_errno values the server sends with SERVER_ERROR, iperf3 3.x's numbers
// (iperf_api.h), so a stock client prints a matching message.
const (
	ierrnoDuration   = 5   // IEDURATION
	ierrnoNumStreams = 6   // IENUMSTREAMS
	ierrnoBlockSize  = 7   // IEBLOCKSIZE
	ierrnoBufSize    = 8   // IEBUFSIZE
	ierrnoMSS        = 10  // IEMSS
	ierrnoOmit       = 12  // IEOMIT
	ierrnoListen     = 102 // IELISTEN: the UDP socket could not be bound
	ierrnoRecvParams = 114 // IERECVPARAMS: parameters unreadable or too large
	ierrnoAuth       = 142 // IEAUTHTEST: used for a bitrate above the server's cap
	ierrnoStreams    = 204 // IESTREAMACCEPT: streams did not arrive in time
)

// Serve runs an iperf3-compatible server on ln until ctx ends. Stock iperf3
// clients and Run can test against it; unlike iperf3 it runs up to
// MaxTests tests at once, and a silent, slow or malformed connection only
// ever holds its own goroutine (each step has a deadline). UDP tests use a
// UDP socket on ln's port. Serve closes ln, waits for every test goroutine
// to end and returns nil when ctx ends, or the accept error that stopped it.
func Serve(ctx context.Context, ln net.Listener, cfg *ServerConfig) error {
	s := &server{cfg: cfg.withDefaults(), ln: ln, tests: map[string]*serverTest{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var err error
	for {
		conn, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				if isTimeout(aerr) {
					continue
				}
				err = fmt.Errorf("throughput: accept: %w", aerr)
			}
			break
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, conn)
		}()
	}
	cancel()
	s.wg.Wait()
	return err
}

type server struct {
	cfg   ServerConfig
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	tests map[string]*serverTest // by cookie
	udpMu chanMutex              // one test at a time sets up UDP streams
}

// chanMutex is a mutex whose Lock can give up when a context ends.
type chanMutex struct {
	once sync.Once
	ch   chan struct{}
}

func (m *chanMutex) init() { m.once.Do(func() { m.ch = make(chan struct{}, 1) }) }

func (m *chanMutex) lock(ctx context.Context) error {
	m.init()
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
	streams   chan net.Conn // TCP data streams handed over by the acceptor
	accepting bool          // under server.mu
}

// handle reads a new connection's cookie and routes it: to a test that is
// waiting for data streams, or to a new test.
func (s *server) handle(ctx context.Context, conn net.Conn) {
	cookie := make([]byte, CookieLen)
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	// A silent connection must not hold Serve up when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	_, err := io.ReadFull(conn, cookie)
	if !stop() || err != nil {
		conn.Close()
		return
	}
	key := string(cookie)
	s.mu.Lock()
	t, known := s.tests[key]
	accepting := known && t.accepting
	s.mu.Unlock()
	if known {
		if !accepting {
			_ = writeState(conn, StateAccessDenied, time.Second)
			conn.Close()
			return
		}
		select {
		case t.streams <- conn:
		case <-time.After(s.cfg.HandshakeTimeout):
			conn.Close()
		}
		return
	}
	s.mu.Lock()
	if len(s.tests) >= s.cfg.MaxTests {
		s.mu.Unlock()
		_ = writeState(conn, StateAccessDenied, time.Second)
		conn.Close()
		return
	}
	t = &serverTest{streams: make(chan net.Conn, MaxStreams)}
	s.tests[key] = t
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.tests, key)
		s.mu.Unlock()
		for {
			select {
			case c := <-t.streams:
				c.Close()
			default:
				return
			}
		}
	}()
	st := &serverSession{srv: s, cfg: s.cfg, ctrl: conn, test: t, cookie: cookie}
	st.run(ctx)
	conn.Close()
}

func (s *server) setAccepting(t *serverTest, v bool) {
	s.mu.Lock()
	t.accepting = v
	s.mu.Unlock()
}

// serverSession runs one test on the server side.
type serverSession struct {
	srv    *server
	cfg    ServerConfig
	ctrl   net.Conn
	test   *serverTest
	cookie []byte
}

func (ss *serverSession) fail(ierrno int, err error) error {
	_ = writeServerError(ss.ctrl, ierrno, 0, ss.cfg.IOTimeout)
	return err
}

// checkParams applies the server's limits to a client's parameters and
// returns iperf3's error code for the first one exceeded.
func (ss *serverSession) checkParams(p *params) (int, error) {
	c := ss.cfg
	n := int(p.Parallel)
	if p.Bidirectional {
		n *= 2
	}
	udp := bool(p.UDP)
	dur := time.Duration(p.Time+p.Omit) * time.Second
	switch {
	case p.Parallel < 1 || n > c.MaxStreams:
		return ierrnoNumStreams, fmt.Errorf("%w: %d streams, limit %d", ErrLimit, n, c.MaxStreams)
	case p.Omit < 0 || p.Omit > 600:
		return ierrnoOmit, fmt.Errorf("%w: omit %d s", ErrLimit, p.Omit)
	case p.Time < 0 || dur > c.MaxDuration:
		return ierrnoDuration, fmt.Errorf("%w: omit %d s + time %d s, limit %v", ErrLimit, p.Omit, p.Time, c.MaxDuration)
	case p.Num < 0 || p.BlockCount < 0:
		return ierrnoDuration, fmt.Errorf("%w: negative bytes or blocks", ErrLimit)
	case udp && p.Len != 0 && (p.Len < minUDPLen || p.Len > maxUDPLen):
		return ierrnoBlockSize, fmt.Errorf("%w: udp length %d", ErrLimit, p.Len)
	case !udp && (p.Len < 0 || p.Len > 16<<20):
		return ierrnoBlockSize, fmt.Errorf("%w: block length %d", ErrLimit, p.Len)
	case p.Window < 0 || p.Window > 512<<20:
		return ierrnoBufSize, fmt.Errorf("%w: window %d", ErrLimit, p.Window)
	case p.MSS < 0 || p.MSS > 32767:
		return ierrnoMSS, fmt.Errorf("%w: MSS %d", ErrLimit, p.MSS)
	case p.Bandwidth < 0:
		return ierrnoAuth, fmt.Errorf("%w: bandwidth %d", ErrLimit, p.Bandwidth)
	case c.MaxBitrate > 0 && (p.Bandwidth == 0 || float64(p.Bandwidth) > c.MaxBitrate):
		return ierrnoAuth, fmt.Errorf("%w: bandwidth %d, limit %.0f", ErrLimit, p.Bandwidth, c.MaxBitrate)
	}
	return 0, nil
}

func (ss *serverSession) run(ctx context.Context) {
	c := ss.cfg
	setNoDelay(ss.ctrl)
	// When ctx ends, a handshake read in progress returns at once; later
	// steps check ctx before they block.
	stop := context.AfterFunc(ctx, func() { _ = ss.ctrl.SetReadDeadline(time.Now()) })
	defer stop()
	if err := writeState(ss.ctrl, StateParamExchange, c.HandshakeTimeout); err != nil {
		return
	}
	pj, err := readJSON(ss.ctrl, c.MaxParamsBytes, c.HandshakeTimeout)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		_ = ss.fail(ierrnoRecvParams, err)
		return
	}
	p, err := decodeParams(pj)
	if err != nil {
		_ = ss.fail(ierrnoRecvParams, err)
		return
	}
	if code, err := ss.checkParams(p); err != nil {
		_ = ss.fail(code, err)
		return
	}
	udp := bool(p.UDP)
	blockLen := int(p.Len)
	if blockLen == 0 {
		blockLen = DefaultTCPBlockLen
		if udp {
			blockLen = 1460
		}
	}
	rate := float64(p.Bandwidth)
	interval := c.Interval
	if p.Interval >= 0.1 && p.Interval <= 60 {
		interval = time.Duration(p.Interval * float64(time.Second))
	}
	t := &testRun{
		role: "server", udp: udp, numStreams: int(p.Parallel),
		duration: time.Duration(p.Time) * time.Second, omit: time.Duration(p.Omit) * time.Second,
		bytes: int64(p.Num), blocks: int64(p.BlockCount), reverse: bool(p.Reverse), bidir: bool(p.Bidirectional),
		window: int(p.Window), mss: int(p.MSS), congestion: p.Congestion, interval: interval,
		// The server never sets limitBytes/limitBlks: the client ends the test.
		eng: newEngine(engineSettings{
			blockLen: blockLen, rate: rate, counters64: p.UDPCounters64 != 0, ioTimeout: c.IOTimeout, readLen: c.ReadLen,
		}),
	}
	defer func() {
		t.eng.stop()
		t.eng.closeAll()
	}()
	n := int(p.Parallel)
	var sends []bool // in accept order: receivers first, then senders (as iperf3's server)
	for i := 0; i < n; i++ {
		sends = append(sends, bool(p.Reverse))
	}
	if p.Bidirectional {
		for i := 0; i < n; i++ {
			sends = append(sends, true)
		}
	}
	if udp {
		err = ss.udpStreams(ctx, t, sends)
	} else {
		err = ss.tcpStreams(ctx, t, sends)
	}
	if err != nil {
		return
	}
	if writeState(ss.ctrl, StateTestStart, c.IOTimeout) != nil || writeState(ss.ctrl, StateTestRunning, c.IOTimeout) != nil {
		return
	}
	states := make(chan stateMsg, 1)
	limit := c.MaxDuration
	if t.duration > 0 {
		limit = t.omit + t.duration
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		s, err := readState(ss.ctrl, limit+c.IOTimeout)
		states <- stateMsg{s: s, err: err}
	}()
	defer func() {
		_ = ss.ctrl.SetReadDeadline(time.Now())
		<-watchDone
	}()
	stopRep := t.begin()
	hard := time.NewTimer(c.MaxDuration + c.IOTimeout)
	defer hard.Stop()
	var m stateMsg
	select {
	case m = <-states:
	case <-t.eng.done:
		m.err = t.eng.failure()
		if m.err == nil {
			m = <-states // a limit never ends a server-side test; the client does
		}
	case <-hard.C:
		m.err = fmt.Errorf("%w: test exceeded %v", ErrLimit, c.MaxDuration)
	case <-ctx.Done():
		m.err = ctx.Err()
	}
	t.end(stopRep, true)
	if m.err == nil && m.s != StateTestEnd {
		m.err = fmt.Errorf("%w: client sent %v while running", ErrProtocol, m.s)
	}
	if m.err != nil {
		if ctx.Err() != nil {
			_ = writeState(ss.ctrl, StateServerTerminate, time.Second)
		}
		return
	}
	t.eng.stop()
	t.eng.closeAll()
	if writeState(ss.ctrl, StateExchangeResults, c.IOTimeout) != nil {
		return
	}
	rj, err := readJSON(ss.ctrl, c.MaxResultsBytes, c.IOTimeout)
	if err != nil {
		return
	}
	remote, err := decodeResults(rj)
	if err != nil {
		return
	}
	res := t.result(remote)
	fillRTTStats(res)
	res.LocalAddr, res.RemoteAddr, res.Cookie, res.PeerVersion = ss.ctrl.LocalAddr().String(), ss.ctrl.RemoteAddr().String(), cookieString(ss.cookie), p.ClientVersion
	mine, err := t.resultsJSON(func(w *wireResults) {
		if p.GetServerOutput == 0 {
			return
		}
		if p.JSONOutput {
			if doc, err := IperfJSON(res); err == nil {
				w.ServerOutputJSON = doc
			}
		} else {
			w.ServerOutputText = IperfText(res)
		}
	})
	if err != nil {
		return
	}
	if writeJSON(ss.ctrl, mine, c.IOTimeout) != nil || writeState(ss.ctrl, StateDisplayResults, c.IOTimeout) != nil {
		return
	}
	// The client answers IPERF_DONE and closes; either is fine.
	_, _ = readState(ss.ctrl, c.IOTimeout)
	if c.OnResult != nil {
		c.OnResult(res)
	}
}

// streamID is iperf3's id for the i-th stream (0-based): 1, 3, 4, 5, ...
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

func (ss *serverSession) tcpStreams(ctx context.Context, t *testRun, sends []bool) error {
	c := ss.cfg
	ss.srv.setAccepting(ss.test, true)
	defer ss.srv.setAccepting(ss.test, false)
	if err := writeState(ss.ctrl, StateCreateStreams, c.IOTimeout); err != nil {
		return err
	}
	deadline := time.NewTimer(c.HandshakeTimeout)
	defer deadline.Stop()
	for i, send := range sends {
		select {
		case conn := <-ss.test.streams:
			tuneTCP(conn, t)
			t.eng.streams = append(t.eng.streams, &flowStream{id: streamID(i), send: send, conn: conn})
		case <-deadline.C:
			return ss.fail(ierrnoStreams, fmt.Errorf("%w: %d of %d streams arrived", ErrProtocol, i, len(sends)))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// tuneTCP applies a test's socket options to an accepted data stream.
func tuneTCP(conn net.Conn, t *testRun) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	if t.window > 0 {
		_ = tc.SetReadBuffer(t.window)
		_ = tc.SetWriteBuffer(t.window)
	}
	if t.congestion != "" {
		if rc, err := tc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = controlTCP(fd, sockOpts{congestion: t.congestion}) })
		}
	}
}

// udpStreams binds the UDP port, answers each stream's hello from the
// client's address, and turns the socket that got it into that stream's
// connected socket, as iperf3's server does.
func (ss *serverSession) udpStreams(ctx context.Context, t *testRun, sends []bool) error {
	c := ss.cfg
	hctx, cancel := context.WithTimeout(ctx, c.HandshakeTimeout)
	defer cancel()
	if err := ss.srv.udpMu.lock(hctx); err != nil {
		return ss.fail(ierrnoListen, err)
	}
	defer ss.srv.udpMu.unlock()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = reuseAddr(fd) }); err != nil {
			return err
		}
		return serr
	}}
	laddr := ss.srv.ln.Addr().String()
	listen := func() (*net.UDPConn, error) {
		pc, err := lc.ListenPacket(hctx, "udp", laddr)
		if err != nil {
			return nil, err
		}
		return pc.(*net.UDPConn), nil
	}
	cur, err := listen()
	if err != nil {
		return ss.fail(ierrnoListen, fmt.Errorf("throughput: udp listen %s: %w", laddr, err))
	}
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	if err := writeState(ss.ctrl, StateCreateStreams, c.IOTimeout); err != nil {
		return err
	}
	peerIP := ss.ctrl.RemoteAddr().(*net.TCPAddr).IP
	dl, _ := hctx.Deadline()
	buf := make([]byte, 64)
	for i := 0; i < len(sends); {
		_ = cur.SetReadDeadline(dl)
		n, from, err := cur.ReadFromUDP(buf)
		if err != nil {
			return ss.fail(ierrnoStreams, fmt.Errorf("throughput: udp stream %d hello: %w", streamID(i), err))
		}
		if !from.IP.Equal(peerIP) || n != 4 || !isConnectMsg(buf[:4]) {
			continue // a stray datagram; the client retries lost hellos
		}
		next, err := listen()
		if err != nil {
			return ss.fail(ierrnoListen, err)
		}
		rc, err := cur.SyscallConn()
		if err == nil {
			var cerr error
			err = rc.Control(func(fd uintptr) { cerr = connectFD(fd, from) })
			if err == nil {
				err = cerr
			}
		}
		if err != nil {
			next.Close()
			return ss.fail(ierrnoStreams, fmt.Errorf("throughput: udp connect %v: %w", from, err))
		}
		var reply [4]byte
		binary.LittleEndian.PutUint32(reply[:], udpConnectReply)
		_ = cur.SetWriteDeadline(time.Now().Add(c.IOTimeout))
		if _, err := cur.Write(reply[:]); err != nil {
			next.Close()
			return ss.fail(ierrnoStreams, err)
		}
		_ = cur.SetReadDeadline(time.Time{})
		tuneUDP(cur, t.window, sends[i], !c.DisableFastPath)
		s := &flowStream{id: streamID(i), send: sends[i], udp: true, conn: cur}
		if !c.DisableFastPath {
			s.fast, _ = newUDPFast(cur, sends[i], t.eng.blockLen)
		}
		t.eng.streams = append(t.eng.streams, s)
		cur = next
		i++
	}
	return nil
}
