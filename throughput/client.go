package throughput

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/netperfkit/netperfkit/latency"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Unlimited as Config.Bitrate asks for no rate limit (iperf3's -b 0).
const Unlimited = -1

// Config describes a test run by Run. A nil *Config means all defaults: one
// TCP stream for 10 seconds, client sending, 128 KiB blocks.
type Config struct {
	// UDP selects UDP instead of TCP.
	UDP bool
	// Streams is the number of parallel streams, 1..128; 0 means 1.
	Streams int
	// Duration of the test after Omit; 0 means 10 s unless Bytes or Blocks is set.
	Duration time.Duration
	// Bytes ends the test after this many bytes (iperf3 -n); 0 means no limit.
	Bytes int64
	// Blocks ends the test after this many blocks (iperf3 -k); 0 means no limit.
	Blocks int64
	// Reverse makes the server send (iperf3 -R).
	Reverse bool
	// Bidir makes both sides send at once (iperf3 --bidir).
	Bidir bool
	// BlockLen is the write length; 0 means 1 MiB for TCP (iperf3 uses 128
	// KiB; larger writes cost fewer system calls) and 1460 for UDP.
	BlockLen int
	// Bitrate is the per-stream target in bits/s; 0 means iperf3's default
	// (1 Mbit/s for UDP, unlimited for TCP), Unlimited (or any negative) means no limit.
	Bitrate float64
	// ReadLen is the size of each TCP receive read; 0 means DefaultReadLen.
	ReadLen int
	// Window sets SO_SNDBUF and SO_RCVBUF on the data sockets; 0 leaves the OS default.
	Window int
	// MSS sets TCP_MAXSEG (linux); 0 leaves the default.
	MSS int
	// NoDelay sets TCP_NODELAY on the data streams.
	NoDelay bool
	// Congestion selects the TCP congestion control algorithm (linux), "" the default.
	Congestion string
	// Omit is how long to send before counting starts (iperf3 -O).
	Omit time.Duration
	// Interval between reports; 0 means 1 s, negative disables interval reports.
	Interval time.Duration
	// OnInterval, when set, is called with each interval report from a
	// single goroutine while the test runs; it must return quickly.
	OnInterval func(Interval)
	// GetServerOutput asks the server for its own report (iperf3
	// --get-server-output). The client asks for it anyway in reverse and
	// bidirectional TCP tests to fill in the server's TCP_INFO.
	GetServerOutput bool
	// UDP32BitCounters uses iperf3's legacy 32-bit packet counters; the
	// default is 64-bit counters.
	UDP32BitCounters bool
	// ConnectTimeout bounds each connection set-up; 0 means 10 s.
	ConnectTimeout time.Duration
	// IOTimeout bounds every read and write on the control connection and
	// every data write; 0 means 10 s.
	IOTimeout time.Duration
	// DisableFastPath turns off UDP GSO/GRO on linux.
	DisableFastPath bool
	// Title is sent to the server as iperf3's title parameter.
	Title string
	// Latency, when set, measures round trips to a sockperf-compatible echo
	// server while the flows run (RTT under load); see Result.Latency.
	Latency *LatencyProbe
}

func (c *Config) withDefaults() Config {
	var d Config
	if c != nil {
		d = *c
	}
	if d.Streams == 0 {
		d.Streams = 1
	}
	if d.Duration == 0 && d.Bytes == 0 && d.Blocks == 0 {
		d.Duration = 10 * time.Second
	}
	if d.BlockLen == 0 {
		d.BlockLen = DefaultBlockLen
		if d.UDP {
			d.BlockLen = 1460
		}
	}
	if d.Bitrate == 0 && d.UDP {
		d.Bitrate = DefaultUDPBitrate
	}
	if d.Bitrate < 0 {
		d.Bitrate = 0
	}
	if d.Interval == 0 {
		d.Interval = time.Second
	}
	if d.ConnectTimeout == 0 {
		d.ConnectTimeout = 10 * time.Second
	}
	if d.IOTimeout == 0 {
		d.IOTimeout = 10 * time.Second
	}
	return d
}

func (c *Config) validate() error {
	switch {
	case c.Streams < 1 || c.Streams > MaxStreams:
		return fmt.Errorf("throughput: streams %d outside 1..%d", c.Streams, MaxStreams)
	case c.Reverse && c.Bidir:
		return errors.New("throughput: reverse and bidir are exclusive")
	case c.UDP && (c.BlockLen < minUDPLen || c.BlockLen > maxUDPLen):
		return fmt.Errorf("throughput: udp length %d outside %d..%d", c.BlockLen, minUDPLen, maxUDPLen)
	case c.BlockLen < 1:
		return fmt.Errorf("throughput: block length %d", c.BlockLen)
	case c.Duration < 0 || c.Omit < 0 || c.Bytes < 0 || c.Blocks < 0:
		return errors.New("throughput: negative duration, omit, bytes or blocks")
	}
	return nil
}

// Run runs one test against an iperf3-compatible server at addr
// ("host:port"; the port defaults to 5201) and returns its result. It
// returns errors matching ErrAccessDenied when the server is busy,
// ErrServerError when it reports an error, ErrProtocol on a malformed
// exchange, and the context's error when ctx ends first.
func Run(ctx context.Context, addr string, cfg *Config) (*Result, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(DefaultPort))
	}
	d := net.Dialer{Timeout: c.ConnectTimeout}
	ctrl, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("throughput: connect %s: %w", addr, err)
	}
	cl := &client{cfg: c, ctrl: ctrl, addr: addr}
	stop := context.AfterFunc(ctx, func() { _ = ctrl.SetDeadline(time.Now()) })
	res, err := cl.run(ctx)
	stop()
	_ = ctrl.Close()
	if cl.run_ != nil && cl.run_.eng != nil {
		cl.run_.eng.stop()
		cl.run_.eng.closeAll()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("throughput: %w", ctx.Err())
		}
		return nil, err
	}
	return res, nil
}

type client struct {
	cfg    Config
	ctrl   net.Conn
	addr   string
	cookie []byte
	run_   *testRun
}

func (cl *client) expect(want State) error {
	s, err := readState(cl.ctrl, cl.cfg.IOTimeout)
	if err != nil {
		return err
	}
	return cl.check(s, want)
}

func (cl *client) check(s, want State) error {
	switch {
	case s == want:
		return nil
	case s == StateAccessDenied:
		return ErrAccessDenied
	case s == StateServerError:
		return readServerError(cl.ctrl, cl.cfg.IOTimeout)
	case s == StateServerTerminate:
		return fmt.Errorf("%w: server terminated the test", ErrServerError)
	}
	return fmt.Errorf("%w: got state %v, want %v", ErrProtocol, s, want)
}

func (cl *client) paramsJSON() ([]byte, error) {
	c := cl.cfg
	p := params{
		Omit: wireInt(c.Omit / time.Second), Time: wireInt(c.Duration / time.Second),
		Num: wireInt(c.Bytes), BlockCount: wireInt(c.Blocks), Parallel: wireInt(c.Streams),
		Len: wireInt(c.BlockLen), Bandwidth: wireInt(c.Bitrate), MSS: wireInt(c.MSS),
		Window: wireInt(c.Window), NoDelay: flag(c.NoDelay), Reverse: flag(c.Reverse),
		Bidirectional: flag(c.Bidir), Congestion: c.Congestion, Title: c.Title,
		ClientVersion: "3.12",
	}
	// iperf3 only knows whole seconds; a sub-second duration rounds up so
	// the server does not end first.
	if c.Duration%time.Second != 0 {
		p.Time++
	}
	if c.Omit%time.Second != 0 {
		p.Omit++
	}
	if c.UDP {
		p.UDP = true
		if c.Bitrate > 0 {
			p.PacingTimer = 1000
		}
		if !c.UDP32BitCounters {
			p.UDPCounters64 = 1
		}
	} else {
		p.TCP = true
	}
	if c.GetServerOutput || (!c.UDP && (c.Reverse || c.Bidir)) {
		p.GetServerOutput = 1
		p.JSONOutput = true
		if c.Interval > 0 {
			p.Interval = c.Interval.Seconds()
		}
	}
	return json.Marshal(&p)
}

func (cl *client) run(ctx context.Context) (*Result, error) {
	c := cl.cfg
	setNoDelay(cl.ctrl)
	var err error
	if cl.cookie, err = newCookie(); err != nil {
		return nil, err
	}
	setWrite(cl.ctrl, c.IOTimeout)
	if _, err := cl.ctrl.Write(cl.cookie); err != nil {
		return nil, fmt.Errorf("throughput: send cookie: %w", err)
	}
	if err := cl.expect(StateParamExchange); err != nil {
		return nil, err
	}
	pj, err := cl.paramsJSON()
	if err != nil {
		return nil, fmt.Errorf("throughput: params: %w", err)
	}
	if err := writeJSON(cl.ctrl, pj, c.IOTimeout); err != nil {
		return nil, err
	}
	if err := cl.expect(StateCreateStreams); err != nil {
		return nil, err
	}
	t := &testRun{
		role: "client", udp: c.UDP, numStreams: c.Streams, duration: c.Duration,
		omit: c.Omit, bytes: c.Bytes, blocks: c.Blocks, reverse: c.Reverse, bidir: c.Bidir,
		window: c.Window, mss: c.MSS, congestion: c.Congestion,
		interval: c.Interval, onInterval: c.OnInterval,
		eng: newEngine(engineSettings{
			blockLen: c.BlockLen, rate: c.Bitrate, counters64: c.UDP && !c.UDP32BitCounters, ioTimeout: c.IOTimeout,
			limitBytes: c.Bytes, limitBlks: c.Blocks, readLen: c.ReadLen,
		}),
	}
	cl.run_ = t
	for _, n := range optsNotAvailable(sockOpts{mss: c.MSS, congestion: c.Congestion}) {
		t.note(n)
	}
	var sends []bool
	switch {
	case c.Bidir:
		for i := 0; i < 2*c.Streams; i++ {
			sends = append(sends, i < c.Streams)
		}
	default:
		for i := 0; i < c.Streams; i++ {
			sends = append(sends, !c.Reverse)
		}
	}
	for i, send := range sends {
		s, err := cl.openStream(ctx, streamID(i), send)
		if err != nil {
			return nil, err
		}
		t.eng.streams = append(t.eng.streams, s)
	}
	if err := cl.expect(StateTestStart); err != nil {
		return nil, err
	}
	if err := cl.expect(StateTestRunning); err != nil {
		return nil, err
	}

	// The control connection stays silent while data flows; a reader
	// goroutine watches it for an early SERVER_ERROR or termination.
	states := make(chan stateMsg, 1)
	var ended atomic.Bool
	go cl.watch(states, &ended)

	var probe *probeRun
	if c.Latency != nil {
		probe = startProbe(ctx, c.Latency, c.Omit, c.Omit+c.Duration)
	}
	stopRep := t.begin()
	var timerC <-chan time.Time
	if c.Duration > 0 {
		tm := time.NewTimer(c.Omit + c.Duration)
		defer tm.Stop()
		timerC = tm.C
	}
	var early *stateMsg
	select {
	case <-timerC:
	case <-t.eng.done:
	case <-ctx.Done():
	case m := <-states:
		early = &m
	}
	t.end(stopRep, false)
	ended.Store(true)
	var probeRes *latency.PingPongResult
	var probeErr error
	if probe != nil {
		probeRes, probeErr = probe.stop()
	}
	if ctx.Err() != nil {
		_ = writeState(cl.ctrl, StateClientTerminate, time.Second)
		return nil, ctx.Err()
	}
	if early != nil {
		if early.err != nil {
			return nil, early.err
		}
		return nil, cl.check(early.s, StateExchangeResults)
	}
	if err := t.eng.failure(); err != nil {
		_ = writeState(cl.ctrl, StateClientTerminate, c.IOTimeout)
		return nil, err
	}
	if err := writeState(cl.ctrl, StateTestEnd, c.IOTimeout); err != nil {
		return nil, err
	}
	// Receivers keep draining (without counting) until the server has closed
	// its streams: closing a socket with unread data resets the connection,
	// and a stock iperf3 server that is still writing exits on that error.
	m := <-states
	t.eng.stop()
	t.eng.closeAll()
	if m.err != nil {
		return nil, m.err
	}
	if err := cl.check(m.s, StateExchangeResults); err != nil {
		return nil, err
	}
	mine, err := t.resultsJSON(nil)
	if err != nil {
		return nil, fmt.Errorf("throughput: results: %w", err)
	}
	if err := writeJSON(cl.ctrl, mine, c.IOTimeout); err != nil {
		return nil, err
	}
	rj, err := readJSON(cl.ctrl, DefaultMaxResultsBytes, c.IOTimeout)
	if err != nil {
		return nil, err
	}
	remote, err := decodeResults(rj)
	if err != nil {
		return nil, err
	}
	if err := cl.expect(StateDisplayResults); err != nil {
		return nil, err
	}
	_ = writeState(cl.ctrl, StateIperfDone, c.IOTimeout)
	res := t.result(remote)
	res.LocalAddr, res.RemoteAddr, res.Cookie = cl.ctrl.LocalAddr().String(), cl.ctrl.RemoteAddr().String(), cookieString(cl.cookie)
	res.ServerOutputJSON, res.ServerOutputText = remote.ServerOutputJSON, remote.ServerOutputText
	mergeServerTCPInfo(res, remote.ServerOutputJSON)
	if len(remote.ServerOutputJSON) == 0 {
		mergeServerText(res, remote.ServerOutputText)
	}
	fillRTTStats(res)
	if probe != nil {
		res.Latency = probeRes
		if probeErr != nil {
			res.Notes = append(res.Notes, "latency probe: "+probeErr.Error())
		}
	}
	if !c.GetServerOutput {
		res.ServerOutputJSON, res.ServerOutputText = nil, ""
	}
	return res, nil
}

type stateMsg struct {
	s   State
	err error
}

// watch reads state bytes from the control connection while the test runs
// and delivers the first one (with SERVER_ERROR's codes) on states.
func (cl *client) watch(states chan<- stateMsg, ended *atomic.Bool) {
	for {
		s, err := readState(cl.ctrl, cl.cfg.IOTimeout)
		if err != nil && isTimeout(err) && !ended.Load() {
			continue
		}
		if err != nil {
			states <- stateMsg{err: err}
			return
		}
		if s == StateServerError {
			states <- stateMsg{s: s, err: readServerError(cl.ctrl, cl.cfg.IOTimeout)}
			return
		}
		states <- stateMsg{s: s}
		return
	}
}

// openStream connects one data stream and introduces it to the server.
func (cl *client) openStream(ctx context.Context, id int, send bool) (*flowStream, error) {
	c := cl.cfg
	opts := sockOpts{window: c.Window, mss: c.MSS, congestion: c.Congestion}
	if c.UDP {
		return cl.openUDP(ctx, id, send)
	}
	d := net.Dialer{Timeout: c.ConnectTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = controlTCP(fd, opts) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "tcp", cl.addr)
	if err != nil {
		return nil, fmt.Errorf("throughput: stream %d: %w", id, err)
	}
	if c.NoDelay {
		setNoDelay(conn)
	}
	setWrite(conn, c.IOTimeout)
	if _, err := conn.Write(cl.cookie); err != nil {
		conn.Close()
		return nil, fmt.Errorf("throughput: stream %d cookie: %w", id, err)
	}
	return &flowStream{id: id, send: send, conn: conn}, nil
}

func (cl *client) openUDP(ctx context.Context, id int, send bool) (*flowStream, error) {
	c := cl.cfg
	d := net.Dialer{Timeout: c.ConnectTimeout}
	conn, err := d.DialContext(ctx, "udp", cl.addr)
	if err != nil {
		return nil, fmt.Errorf("throughput: udp stream %d: %w", id, err)
	}
	uc := conn.(*net.UDPConn)
	tuneUDP(uc, c.Window, send, !c.DisableFastPath)
	var hello [4]byte
	binary.LittleEndian.PutUint32(hello[:], udpConnectMsg)
	buf := make([]byte, 65536)
	// Retry the hello a few times: UDP may drop it, and the server answers once.
	for attempt := 0; attempt < 3; attempt++ {
		setWrite(uc, c.IOTimeout)
		if _, err := uc.Write(hello[:]); err != nil {
			uc.Close()
			return nil, fmt.Errorf("throughput: udp stream %d hello: %w", id, err)
		}
		_ = uc.SetReadDeadline(time.Now().Add(c.IOTimeout / 3))
		for {
			n, err := uc.Read(buf)
			if err != nil {
				if isTimeout(err) {
					break
				}
				uc.Close()
				return nil, fmt.Errorf("throughput: udp stream %d reply: %w", id, err)
			}
			// In reverse mode data may overtake the reply; skip it.
			if n == 4 && isConnectReply(buf[:4]) {
				s := &flowStream{id: id, send: send, udp: true, conn: uc}
				if !c.DisableFastPath {
					s.fast, _ = newUDPFast(uc, send, c.BlockLen)
				}
				return s, nil
			}
		}
	}
	uc.Close()
	return nil, fmt.Errorf("throughput: udp stream %d: no reply from server: %w", id, context.DeadlineExceeded)
}

func isConnectReply(b []byte) bool {
	le, be := binary.LittleEndian.Uint32(b), binary.BigEndian.Uint32(b)
	return le == udpConnectReply || be == udpConnectReply || le == legacyConnectReply || be == legacyConnectReply
}

func isConnectMsg(b []byte) bool {
	le, be := binary.LittleEndian.Uint32(b), binary.BigEndian.Uint32(b)
	return le == udpConnectMsg || be == udpConnectMsg || le == legacyConnectMsg || be == legacyConnectMsg
}

// fastRecvBuf is the receive buffer forced on a UDP receiver that tries the
// linux GRO fast path: room for the sender's bursts while the receiver is
// descheduled, ~10 ms at 50 Gbit/s.
const fastRecvBuf = 64 << 20

// tuneUDP sizes a UDP socket's buffers: the requested window, or generous
// defaults so a receiver does not drop at high rates. A receiver that will
// try the fast path (fast) gets fastRecvBuf forced instead, whatever the
// window and whether or not the kernel then accepts GRO. Forcing past
// rmem_max/wmem_max needs root; otherwise the plain setting stays.
func tuneUDP(uc *net.UDPConn, window int, send, fast bool) {
	n := window
	if n == 0 {
		n = 4 << 20
	}
	_ = uc.SetReadBuffer(n)
	_ = uc.SetWriteBuffer(n)
	rcv := n
	if fast && !send && udpFastAvailable {
		rcv = fastRecvBuf
	}
	forceBuffers(uc, rcv, n)
}
