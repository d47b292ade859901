package throughput

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// maxResultsBytes caps a results JSON (iperf3 has no limit;
// server_output_json of a long test can be large).
const maxResultsBytes = 4 << 20

// Run runs one test against an iperf3-compatible server at addr
// ("host:port"; the port defaults to 5201) and returns its result.
//
// When ctx ends, Run tells the server, closes its connections and returns
// within 100 ms, in any phase, with the partial Result and an error
// matching ctx.Err(). Otherwise a failed run returns what it has and an
// error: one naming the Config field at fault when cfg is invalid,
// ErrAccessDenied when the server is busy or refuses, ErrServerError when
// it reports an error, or ErrProtocol on a malformed exchange.
//
// The Result is never nil, whatever the error (docs/conventions.md,
// "Results after an error"): before the connection exists it holds Role
// and Config and nothing measured.
func Run(ctx context.Context, addr string, cfg *Config) (*Result, error) {
	c := withDefaults(cfg)
	empty := func() *Result { return &Result{Role: role(false), Config: withoutHooks(&c)} }
	if err := checkRun(ctx, addr, cfg); err != nil {
		return empty(), err
	}
	if err := validate(&c); err != nil {
		return empty(), err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(defaultPort))
	}
	d := net.Dialer{Timeout: c.ConnectTimeout, LocalAddr: localAddr(&c, "tcp", 0), Control: ctrlControl(&c)}
	d.SetMultipathTCP(c.MPTCP)
	if ka := c.ControlKeepAlive; ka != nil {
		d.KeepAliveConfig = *ka
		d.KeepAliveConfig.Enable = true // Go replaces a disabled one with its defaults
	}
	ctrl, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return empty(), fmt.Errorf("throughput: connect %s: %w", addr, ctx.Err())
		}
		return empty(), fmt.Errorf("throughput: connect %s: %w", addr, err)
	}
	if c.UDP && (cfg == nil || cfg.BlockLen == 0) {
		// As iperf3 3.21: the control connection's MSS is a datagram that
		// crosses the path unfragmented (a 9001-byte MTU gives 8949), on
		// the guess that the data takes the same path.
		if mss := connMSS(ctrl); mss >= iperfwire.MinUDPLen && mss <= iperfwire.MaxUDPLen {
			c.BlockLen = mss
		}
	}
	cl := &client{session: session{ctrl: ctrl, cfg: c}, addr: addr}
	return cl.run(ctx, cl)
}

// checkRun checks Run's arguments and the fields withDefaults would hide
// (a negative timeout becomes the default).
func checkRun(ctx context.Context, addr string, cfg *Config) error {
	switch {
	case ctx == nil:
		return errors.New("throughput: Run: nil ctx")
	case addr == "":
		return errors.New("throughput: Run: empty addr")
	case cfg != nil && cfg.ConnectTimeout < 0:
		return fmt.Errorf("throughput: Config.ConnectTimeout %v is negative", cfg.ConnectTimeout)
	case cfg != nil && cfg.IOTimeout < 0:
		return fmt.Errorf("throughput: Config.IOTimeout %v is negative", cfg.IOTimeout)
	}
	return nil
}

// client is the client's side of a session.
type client struct {
	session
	addr string
	// early is the state the server sent before TEST_END, which await has
	// taken off states: watch delivers exactly one.
	early *stateMsg
}

func (cl *client) expect(want iperfwire.State) error {
	s, err := iperfwire.ReadState(cl.ctrl, cl.cfg.IOTimeout)
	if err != nil {
		return err
	}
	return cl.check(s, want)
}

func (cl *client) check(s, want iperfwire.State) error {
	switch {
	case s == want:
		return nil
	case s == iperfwire.AccessDenied:
		return errBusy
	case s == iperfwire.ServerError:
		return readServerError(cl.ctrl, cl.cfg.IOTimeout)
	case s == iperfwire.ServerTerminate:
		return ErrServerTerminated
	}
	return fmt.Errorf("%w: got state %v, want %v", ErrProtocol, s, want)
}

func (cl *client) handshake(ctx context.Context) error {
	var err error
	if cl.cookie, err = iperfwire.NewCookie(); err != nil {
		return err
	}
	iperfwire.SetWrite(cl.ctrl, cl.cfg.IOTimeout)
	if _, err := cl.ctrl.Write(cl.cookie); err != nil {
		return fmt.Errorf("throughput: send cookie: %w", err)
	}
	if err := cl.expect(iperfwire.ParamExchange); err != nil {
		return err
	}
	p := params(&cl.cfg)
	if a := cl.cfg.Auth; a != nil {
		if p.AuthToken, err = authToken(a, authClock(ctx)); err != nil {
			return err
		}
	}
	pj, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("throughput: params: %w", err)
	}
	if err := paramsFit(&cl.cfg, len(pj)); err != nil {
		return err // with the credentials' token
	}
	if err := iperfwire.WriteJSON(cl.ctrl, pj, cl.cfg.IOTimeout); err != nil {
		return err
	}
	err = cl.expect(iperfwire.CreateStreams)
	if err != nil && cl.cfg.Auth != nil && classify(err) == reasonPeerGone && ctx.Err() == nil {
		// iperf3 3.21 refuses credentials by closing the connection
		// without a word.
		return fmt.Errorf("%w (the server closed the connection after reading the credentials: %w)", ErrAuthFailed, err)
	}
	return err
}

func (cl *client) openStreams(ctx context.Context) error {
	for i, send := range sends(&cl.cfg, false) {
		open := cl.openTCP
		if cl.cfg.UDP {
			open = cl.openUDP
		}
		s, err := open(ctx, streamID(i), send)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		cl.t.eng.streams = append(cl.t.eng.streams, s)
	}
	return cl.t.eng.openData()
}

func (cl *client) started() error {
	if err := cl.expect(iperfwire.TestStart); err != nil {
		return err
	}
	return cl.expect(iperfwire.TestRunning)
}

// await waits for the test's duration, a byte or block limit, a failed
// stream, or an early word from the server.
func (cl *client) await(ctx context.Context, states <-chan stateMsg) error {
	var timerC <-chan time.Time
	if cl.cfg.Duration > 0 {
		tm := time.NewTimer(cl.cfg.Omit + cl.cfg.Duration)
		defer tm.Stop()
		timerC = tm.C
	}
	select {
	case <-timerC:
	case <-cl.t.eng.done:
		if err := cl.t.eng.failure(); err != nil && !localFailure(err) {
			return cl.serverWord(ctx, states)
		}
	case <-ctx.Done():
		return ctx.Err()
	case m := <-states:
		if m.err != nil {
			return m.err
		}
		cl.early = &m
		return cl.check(m.s, iperfwire.ExchangeResults)
	}
	return nil
}

// localFailure reports whether err is this side's own doing (its source,
// its sink, its receive-idle timeout), for which no word from the server
// is worth waiting.
func localFailure(err error) bool {
	var de *dataError
	return errors.As(err, &de) || errors.Is(err, ErrRecvIdle)
}

// serverWordGrace is how long a client whose stream failed waits for the
// server's word on the control connection.
const serverWordGrace = 500 * time.Millisecond

// serverWord waits a moment, after a stream failed, for the server to say
// why on the control connection: a server that ends a test (iperf3's
// --server-bitrate-limit, or a server stopped) writes SERVER_ERROR or
// SERVER_TERMINATE before it closes the streams, whose resets can still
// reach a sender first. That word is the test's error; without one it
// returns nil and exchange reports the stream's failure.
func (cl *client) serverWord(ctx context.Context, states <-chan stateMsg) error {
	grace := time.NewTimer(serverWordGrace)
	defer grace.Stop()
	select {
	case m := <-states:
		cl.early = &m // exchange reports the stream's failure before it looks
		err := m.err
		if err == nil {
			err = cl.check(m.s, iperfwire.ExchangeResults)
		}
		if errors.Is(err, ErrServerError) {
			return err
		}
	case <-grace.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (cl *client) exchange(states <-chan stateMsg) (*iperfwire.Results, error) {
	c := cl.cfg
	if err := cl.t.eng.failure(); err != nil {
		_ = iperfwire.WriteState(cl.ctrl, iperfwire.ClientTerminate, c.IOTimeout)
		return nil, err
	}
	// After an early EXCHANGE_RESULTS a 3.21 client sends its results at
	// once, without TEST_END: the server is past waiting for it.
	if cl.early == nil {
		if err := iperfwire.WriteState(cl.ctrl, iperfwire.TestEnd, c.IOTimeout); err != nil {
			return nil, err
		}
	}
	// Receivers keep draining (without counting) until the server has closed
	// its streams: closing a socket with unread data resets the connection,
	// and a stock iperf3 server that is still writing exits on that error.
	var m stateMsg
	if cl.early != nil {
		m = *cl.early
	} else {
		m = <-states
	}
	cl.closeStreams()
	if m.err != nil {
		return nil, m.err
	}
	if err := cl.check(m.s, iperfwire.ExchangeResults); err != nil {
		return nil, err
	}
	mine, err := cl.t.resultsJSON(nil)
	if err != nil {
		return nil, fmt.Errorf("throughput: results: %w", err)
	}
	if err := iperfwire.WriteJSON(cl.ctrl, mine, c.IOTimeout); err != nil {
		return nil, err
	}
	rj, err := iperfwire.ReadJSON(cl.ctrl, maxResultsBytes, c.IOTimeout)
	if err != nil {
		return nil, err
	}
	return iperfwire.DecodeResults(rj)
}

func (cl *client) finish(res *Result, remote *iperfwire.Results) error {
	derr := cl.expect(iperfwire.DisplayResults)
	if derr == nil {
		_ = iperfwire.WriteState(cl.ctrl, iperfwire.IperfDone, cl.cfg.IOTimeout)
	}
	mergeServerTCPInfo(res, remote.ServerOutputJSON)
	if len(remote.ServerOutputJSON) == 0 {
		mergeServerText(res, remote.ServerOutputText)
	}
	if cl.cfg.GetServerOutput {
		res.ServerOutputJSON, res.ServerOutputText = remote.ServerOutputJSON, remote.ServerOutputText
	}
	return derr
}

// streamID is iperf3's id for the i-th stream (0-based): 1, 3, 4, 5, ...
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// openTCP connects one data stream and introduces it to the server.
func (cl *client) openTCP(ctx context.Context, id int, send bool) (*flowStream, error) {
	c := cl.cfg
	opts := sockOpts{window: c.Window, mss: c.MSS, congestion: c.Congestion, pacing: pacingRate(&c)}
	d := net.Dialer{Timeout: c.ConnectTimeout, LocalAddr: localAddr(&c, "tcp", streamPort(&c, id)),
		Control: dialControl(&c, func(fd uintptr) error { return controlTCP(fd, opts) })}
	d.SetMultipathTCP(c.MPTCP)
	labelTCPDial(&c, &d)
	conn, err := d.DialContext(ctx, "tcp", cl.addr)
	if err != nil {
		return nil, fmt.Errorf("throughput: stream %d: %w", id, err)
	}
	if !cl.track(conn) {
		return nil, fmt.Errorf("throughput: stream %d: %w", id, net.ErrClosed)
	}
	if c.NoDelay {
		setNoDelay(conn)
	}
	iperfwire.SetWrite(conn, c.IOTimeout)
	if _, err := conn.Write(cl.cookie); err != nil {
		return nil, fmt.Errorf("throughput: stream %d cookie: %w", id, err)
	}
	return &flowStream{id: id, send: send, conn: conn}, nil
}

// openUDP opens one UDP stream: a connected socket whose hello the server
// answers. The hello is retried: UDP may drop it, and the server answers once.
func (cl *client) openUDP(ctx context.Context, id int, send bool) (*flowStream, error) {
	c := cl.cfg
	d := net.Dialer{Timeout: c.ConnectTimeout, LocalAddr: localAddr(&c, "udp", streamPort(&c, id)), Control: dialControl(&c, nil)}
	conn, err := d.DialContext(ctx, "udp", cl.addr)
	if err != nil {
		return nil, fmt.Errorf("throughput: udp stream %d: %w", id, err)
	}
	if !cl.track(conn) {
		return nil, fmt.Errorf("throughput: udp stream %d: %w", id, net.ErrClosed)
	}
	uc := conn.(*net.UDPConn)
	if err := cl.labelUDPStream(uc); err != nil {
		return nil, fmt.Errorf("throughput: udp stream %d: %w", id, err)
	}
	fast := setupUDP(uc, &c, send)
	buf := make([]byte, 65536)
	for range 3 {
		iperfwire.SetWrite(uc, c.IOTimeout)
		if _, err := uc.Write(iperfwire.Hello()); err != nil {
			return nil, fmt.Errorf("throughput: udp stream %d hello: %w", id, err)
		}
		ok, err := awaitReply(uc, buf, c.IOTimeout/3)
		if err != nil {
			return nil, fmt.Errorf("throughput: udp stream %d reply: %w", id, err)
		}
		if ok {
			return &flowStream{id: id, send: send, udp: true, conn: uc, fast: fast}, nil
		}
	}
	return nil, fmt.Errorf("throughput: udp stream %d: no reply from server: %w", id, context.DeadlineExceeded)
}

// labelUDPStream gives a UDP stream Config.FlowLabel; an IPv4 stream goes
// without, as in 3.21, and a note says so.
func (cl *client) labelUDPStream(uc *net.UDPConn) error {
	if cl.cfg.FlowLabel == 0 || !flowLabelAvailable {
		return nil
	}
	peer, _ := uc.RemoteAddr().(*net.UDPAddr)
	if peer == nil {
		return nil
	}
	ok, err := labelUDP(uc, peer, cl.cfg.FlowLabel)
	if err == nil && !ok {
		cl.t.note(noteFlowLabelIPv4)
	}
	return err
}

// awaitReply reads until the server's hello reply arrives (true), the wait
// times out (false) or the socket fails. In reverse mode data may overtake
// the reply; it is skipped.
func awaitReply(uc *net.UDPConn, buf []byte, wait time.Duration) (bool, error) {
	_ = uc.SetReadDeadline(time.Now().Add(wait))
	for {
		n, err := uc.Read(buf)
		if err != nil {
			if isTimeout(err) {
				return false, nil
			}
			return false, err
		}
		if iperfwire.IsConnectReply(buf[:n]) {
			return true, nil
		}
	}
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
