package throughput

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// serverSession is the server's side of a session.
type serverSession struct {
	session
	srv    *Server
	ln     net.Listener
	test   *serverTest
	params *iperfwire.Params
	// counted: finish counted the test in Stats' Completed.
	counted bool
	// free gives the test's slot back; failErrno calls it before the
	// client hears of the failure.
	free func()
}

// fail sends SERVER_ERROR with iperf3's code and returns err as a session
// error of reason r.
func (ss *serverSession) fail(ierrno int, r reason, err error) error {
	return ss.failErrno(ierrno, 0, r, err)
}

// failErrno is fail with the server's errno, which a 3.21 client prints
// after iperf3's text ("unable to set CPU affinity: Invalid argument").
func (ss *serverSession) failErrno(ierrno, errno int, r reason, err error) error {
	if ss.free != nil {
		ss.free()
	}
	_ = iperfwire.WriteServerError(ss.ctrl, ierrno, errno, ss.srv.cfg.IOTimeout)
	return &reasonError{reason: r, err: err}
}

func (ss *serverSession) handshake(ctx context.Context) error {
	c := &ss.srv.cfg
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.ParamExchange, c.HandshakeTimeout); err != nil {
		return err
	}
	pj, err := iperfwire.ReadJSON(ss.ctrl, maxParamsBytes, c.HandshakeTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		r := reason("") // an I/O error: classified by its cause
		if errors.Is(err, ErrProtocol) {
			r = reasonBadParams
		}
		return ss.fail(iperfwire.IErrRecvParams, r, err)
	}
	p, err := iperfwire.DecodeParams(pj)
	if err != nil {
		return ss.fail(iperfwire.IErrRecvParams, reasonBadParams, err)
	}
	if ss.srv.auth != nil {
		// As iperf3, the credentials come before any limit: a client that
		// cannot authenticate learns nothing about the server's limits.
		if _, err := ss.srv.auth.Verify(p.AuthToken); err != nil {
			return ss.fail(iperfwire.IErrAuth, reasonDenied, fmt.Errorf("%w: %w", ErrAuthFailed, err))
		}
	}
	if code, err := checkParams(c, p); err != nil {
		return ss.fail(code, reasonLimit, err)
	}
	if a := p.ServerAffinity; a != nil {
		if errno, err := allowedCPU(int(*a)); err != nil {
			return ss.failErrno(iperfwire.IErrAffinity, errno, reasonLimit, err)
		}
	}
	ss.params = p
	ss.cfg = configFromParams(p, c)
	ss.cfg.OnEvent = c.OnEvent
	return nil
}

// checkParams applies the server's limits to a client's parameters and
// returns iperf3's error code for the first one exceeded.
func checkParams(c *ServerConfig, p *iperfwire.Params) (int, error) {
	// Every value is a peer's int64: bound each one before any arithmetic,
	// so that nothing wraps past a limit.
	n := int64(p.Parallel)
	if p.Bidirectional && n <= maxStreams {
		n *= 2
	}
	udp := bool(p.UDP)
	switch {
	case n < 1 || n > int64(c.MaxStreams):
		return iperfwire.IErrNumStreams, fmt.Errorf("%w: %d streams, limit %d", ErrLimit, n, c.MaxStreams)
	case p.Omit < 0 || p.Omit > maxOmitSecs:
		return iperfwire.IErrOmit, fmt.Errorf("%w: omit %d s", ErrLimit, p.Omit)
	case p.Time < 0 || p.Time > maxTimeSecs ||
		time.Duration(p.Time+p.Omit)*time.Second > c.MaxDuration:
		return iperfwire.IErrDuration, fmt.Errorf("%w: omit %d s + time %d s, limit %v", ErrLimit, p.Omit, p.Time, c.MaxDuration)
	case p.Num < 0 || p.BlockCount < 0:
		return iperfwire.IErrDuration, fmt.Errorf("%w: negative bytes or blocks", ErrLimit)
	case udp && p.Len != 0 && (p.Len < iperfwire.MinUDPLen || p.Len > iperfwire.MaxUDPLen):
		return iperfwire.IErrBlockSize, fmt.Errorf("%w: udp length %d", ErrLimit, p.Len)
	case !udp && (p.Len < 0 || p.Len > maxTCPBlockLen):
		return iperfwire.IErrBlockSize, fmt.Errorf("%w: block length %d", ErrLimit, p.Len)
	case p.Window < 0 || p.Window > 512<<20:
		return iperfwire.IErrBufSize, fmt.Errorf("%w: window %d", ErrLimit, p.Window)
	case p.TOS < 0 || p.TOS > 255:
		return iperfwire.IErrBadTOS, fmt.Errorf("%w: TOS %d", ErrLimit, p.TOS)
	case p.FlowLabel < 0 || p.FlowLabel > maxFlowLabel:
		return iperfwire.IErrSetFlow, fmt.Errorf("%w: %w: %d outside 1..%d", ErrLimit, ErrFlowLabel, p.FlowLabel, maxFlowLabel)
	case p.ServerAffinity != nil && (*p.ServerAffinity < 0 || *p.ServerAffinity > maxAffinity):
		return iperfwire.IErrAffinity, fmt.Errorf("%w: %w: CPU %d outside 0..%d", ErrLimit, ErrAffinity, *p.ServerAffinity, maxAffinity)
	case p.MSS < 0 || p.MSS > 32767:
		return iperfwire.IErrMSS, fmt.Errorf("%w: MSS %d", ErrLimit, p.MSS)
	case p.Bandwidth < 0:
		return iperfwire.IErrTotalRate, fmt.Errorf("%w: bandwidth %d", ErrLimit, p.Bandwidth)
	case c.MaxTotalBitrate > 0 && requestedTotal(n, p) > c.MaxTotalBitrate:
		return iperfwire.IErrTotalRate, fmt.Errorf("%w: %d streams ask for %.0f bits/s, limit %.0f bits/s",
			ErrTotalRate, n, requestedTotal(n, p), c.MaxTotalBitrate)
	case c.MaxBitrate > 0 && (p.Bandwidth == 0 || float64(p.Bandwidth) > c.MaxBitrate):
		return iperfwire.IErrTotalRate, fmt.Errorf("%w: bandwidth %d, limit %.0f", ErrLimit, p.Bandwidth, c.MaxBitrate)
	case udp && (c.SendFrom != nil || c.ReceiveTo != nil):
		return iperfwire.IErrUDPFile, fmt.Errorf("%w: %w: the server sends and receives data from SendFrom and ReceiveTo", ErrLimit, ErrDataNeedsTCP)
	}
	return 0, nil
}

func (ss *serverSession) openStreams(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	left := watchControl(ss.ctrl, cancel)
	var err error
	if ss.cfg.UDP {
		err = ss.udpStreams(sctx)
	} else {
		err = ss.tcpStreams(sctx)
	}
	if gone := left(); gone != nil {
		return gone
	}
	if err != nil {
		return err
	}
	if err := ss.t.eng.openData(); err != nil {
		// As 3.21, with the errno, which its client prints.
		var errno syscall.Errno
		_ = errors.As(err, &errno)
		_ = iperfwire.WriteServerError(ss.ctrl, iperfwire.IErrFile, int(errno), ss.srv.cfg.IOTimeout)
		return &reasonError{reason: reasonStream, err: err}
	}
	return nil
}

// watchControl reads the control connection while a test's streams
// connect, when a client has nothing to say: a stock client that cannot
// connect a stream sends IPERF_DONE and waits for the server to close,
// which must not take the handshake timeout. A byte or the end of the
// connection calls cancel; left stops the watch (with a read deadline, which
// every net.Conn of the standard library honours) and returns why the
// client left, or nil.
func watchControl(c net.Conn, cancel context.CancelFunc) (left func() error) {
	_ = c.SetReadDeadline(time.Time{})
	var gone error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		n, err := c.Read(b[:])
		switch {
		case n == 1:
			gone = fmt.Errorf("throughput: the client sent %v while its streams connected", iperfwire.State(b[0]))
		case errors.Is(err, os.ErrDeadlineExceeded): // left() stopped the watch
			return
		default:
			gone = fmt.Errorf("throughput: the client left while its streams connected: %w", err)
		}
		gone = &reasonError{reason: reasonPeerGone, err: gone}
		cancel()
	}()
	return func() error {
		_ = c.SetReadDeadline(time.Now().Add(-time.Second))
		<-done
		_ = c.SetReadDeadline(time.Time{})
		return gone
	}
}

func (ss *serverSession) started() error {
	if limit := ss.srv.cfg.MaxTotalBitrate; limit > 0 {
		ss.t.limit = newRateWindow(limit, ss.srv.cfg.TotalBitrateWindow, ss.cfg.Interval)
	}
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.TestStart, ss.cfg.IOTimeout); err != nil {
		return err
	}
	return iperfwire.WriteState(ss.ctrl, iperfwire.TestRunning, ss.cfg.IOTimeout)
}

// await waits for the client's TEST_END; a byte or block count never ends a
// server-side test, the client does.
func (ss *serverSession) await(ctx context.Context, states <-chan stateMsg) error {
	hard := time.NewTimer(ss.srv.cfg.MaxDuration + ss.cfg.IOTimeout)
	defer hard.Stop()
	overtime := &reasonError{reason: reasonLimit, err: fmt.Errorf("%w: test exceeded %v", ErrLimit, ss.srv.cfg.MaxDuration)}
	var m stateMsg
	select {
	case m = <-states:
	case <-ss.t.eng.done:
		if m.err = ss.t.eng.failure(); m.err == nil {
			// The streams ended before the client's TEST_END: it still
			// has until the hard limit to send it.
			select {
			case m = <-states:
			case <-hard.C:
				m.err = overtime
			case <-ctx.Done():
				return ctx.Err()
			}
		} else if errors.Is(m.err, ErrRecvIdle) {
			m.err = ss.fail(iperfwire.IErrNoMsg, reasonTimeout, m.err) // 3.21 tells the client
		} else if errors.Is(m.err, ErrTotalRate) {
			m.err = ss.fail(iperfwire.IErrTotalRate, reasonLimit, m.err)
			ss.awaitLeave(ctx, states)
		} else if errors.Is(m.err, ErrAffinity) {
			// A stream's thread could not be pinned (the CPU went away
			// since the parameters were checked): 3.21's words for it.
			m.err = ss.fail(iperfwire.IErrAffinity, reasonLimit, m.err)
		}
	case <-hard.C:
		m.err = overtime
	case <-ctx.Done():
		return ctx.Err()
	}
	if m.err == nil && m.s == iperfwire.ClientTerminate {
		m.err = &reasonError{reason: reasonPeerGone, err: errors.New("throughput: the client terminated the test")}
	}
	if m.err == nil && m.s != iperfwire.TestEnd {
		m.err = fmt.Errorf("%w: client sent %v while running", ErrProtocol, m.s)
	}
	return m.err
}

// leaveGrace bounds how long a server that ended a running test waits for
// the client to leave before it closes the test's streams.
const leaveGrace = time.Second

// awaitLeave stops the streams of a test the server has just ended with
// SERVER_ERROR and waits, at most leaveGrace, for the client to leave
// before they are closed: a stock 3.21 client reports a stream write that
// failed before it read the error instead of the error.
func (ss *serverSession) awaitLeave(ctx context.Context, states <-chan stateMsg) {
	ss.t.eng.stop() // the sockets stay open: the client's writes just wait
	grace := time.NewTimer(leaveGrace)
	defer grace.Stop()
	select {
	case <-states: // the client closed the connection (or said something)
	case <-grace.C:
	case <-ctx.Done():
	}
}

func (ss *serverSession) exchange(<-chan stateMsg) (*iperfwire.Results, error) {
	c := ss.cfg
	ss.closeStreams()
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.ExchangeResults, c.IOTimeout); err != nil {
		return nil, err
	}
	rj, err := iperfwire.ReadJSON(ss.ctrl, maxResultsBytes, c.IOTimeout)
	if err != nil {
		return nil, err
	}
	remote, err := iperfwire.DecodeResults(rj)
	if err != nil {
		return nil, err
	}
	res := ss.result(remote)
	mine, err := ss.t.resultsJSON(func(w *iperfwire.Results) {
		if ss.params.GetServerOutput == 0 {
			return
		}
		if ss.params.JSONOutput {
			if doc, err := iperfJSON(res); err == nil {
				w.ServerOutputJSON = json.RawMessage(doc)
			}
		} else {
			w.ServerOutputText = iperfText(res)
		}
	})
	if err != nil {
		return nil, err
	}
	return remote, iperfwire.WriteJSON(ss.ctrl, mine, c.IOTimeout)
}

func (ss *serverSession) finish(res *Result, _ *iperfwire.Results) error {
	res.PeerVersion = ss.params.ClientVersion
	// The test counts as completed before the client can read
	// DISPLAY_RESULTS: a client's Run that returned without error finds
	// its test in Server.Stats (issue 39). runTest takes it back if the
	// session fails after all.
	ss.srv.stats.completed.Add(1)
	ss.counted = true
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.DisplayResults, ss.cfg.IOTimeout); err != nil {
		return err
	}
	// The client answers IPERF_DONE and closes; either is fine.
	_, _ = iperfwire.ReadState(ss.ctrl, ss.cfg.IOTimeout)
	return nil
}

func (ss *serverSession) tcpStreams(ctx context.Context) error {
	ss.srv.startAccepting(ss.test)
	ss.srv.streamsFrom(ss.ctrl, true)
	defer ss.srv.streamsFrom(ss.ctrl, false)
	defer ss.srv.stopAccepting(ss.test)
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.CreateStreams, ss.cfg.IOTimeout); err != nil {
		return err
	}
	deadline := time.NewTimer(ss.srv.cfg.HandshakeTimeout)
	defer deadline.Stop()
	sends := sends(&ss.cfg, true)
	conns := make([]acceptedConn, 0, len(sends))
	for len(conns) < len(sends) {
		select {
		case conn := <-ss.test.streams:
			if !ss.track(conn.Conn) {
				return net.ErrClosed
			}
			conns = append(conns, conn)
		case <-deadline.C:
			return ss.fail(iperfwire.IErrStreams, reasonTimeout, fmt.Errorf("throughput: %d of %d streams arrived: %w", len(conns), len(sends), errTimeout))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	slices.SortFunc(conns, func(a, b acceptedConn) int { return cmp.Compare(a.seq, b.seq) })
	for i, send := range sends {
		tuneTCP(conns[i].Conn, &ss.cfg)
		ss.t.eng.streams = append(ss.t.eng.streams, &flowStream{id: streamID(i), send: send, conn: conns[i].Conn})
	}
	return nil
}

// tuneTCP applies a test's socket options to an accepted data stream.
func tuneTCP(conn net.Conn, c *Config) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	if c.Window > 0 {
		_ = tc.SetReadBuffer(c.Window)
		_ = tc.SetWriteBuffer(c.Window)
	}
	if c.Congestion != "" || pacingRate(c) > 0 {
		if rc, err := tc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				_ = controlTCP(fd, sockOpts{congestion: c.Congestion, pacing: pacingRate(c)})
			})
		}
	}
	applyExtra(c, conn, "tcp")
}

// udpStreams binds the UDP port, answers each stream's hello from the
// client's address, and turns the socket that got it into that stream's
// connected socket, as iperf3's server does. It needs TCP addresses: the
// UDP socket binds the listener's port on the address the client's control
// connection reached, and accepts the client's IP only.
func (ss *serverSession) udpStreams(ctx context.Context) error {
	laddr, lok := ss.ln.Addr().(*net.TCPAddr)
	peer, pok := ss.ctrl.RemoteAddr().(*net.TCPAddr)
	if !lok || !pok {
		return ss.fail(iperfwire.IErrListen, reasonUnsupported,
			fmt.Errorf("throughput: udp tests need a TCP listener, not %s", ss.ln.Addr().Network()))
	}
	hctx, cancel := context.WithTimeout(ctx, ss.srv.cfg.HandshakeTimeout)
	defer cancel()
	if err := ss.srv.udpMu.lock(hctx); err != nil {
		return ss.fail(iperfwire.IErrListen, reasonTimeout, fmt.Errorf("throughput: waiting for the udp port: %w", err))
	}
	defer ss.srv.udpMu.unlock()
	// The stream sockets bind the address the client reached (the control
	// connection's local one), not the listener's wildcard: a connected
	// socket bound to a wildcard answers from the host's primary address,
	// which a client that sent to a secondary one drops (issue 41).
	if local, ok := ss.ctrl.LocalAddr().(*net.TCPAddr); ok && local.IP != nil && !local.IP.IsUnspecified() {
		laddr = &net.TCPAddr{IP: local.IP, Port: laddr.Port, Zone: local.Zone}
	}
	cur, err := ss.listenUDP(hctx, laddr)
	if err != nil {
		return ss.fail(iperfwire.IErrListen, reasonStream, err)
	}
	if err := iperfwire.WriteState(ss.ctrl, iperfwire.CreateStreams, ss.cfg.IOTimeout); err != nil {
		return err
	}
	dl, _ := hctx.Deadline()
	for i, send := range sends(&ss.cfg, true) {
		from, err := awaitHello(ctx, cur, peer.IP, dl)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ss.fail(iperfwire.IErrStreams, reasonTimeout, fmt.Errorf("throughput: udp stream %d hello: %w", streamID(i), err))
		}
		next, err := ss.listenUDP(hctx, laddr)
		if err != nil {
			return ss.fail(iperfwire.IErrListen, reasonStream, err)
		}
		if err := ss.answerHello(cur, from); err != nil {
			return ss.fail(iperfwire.IErrStreams, reasonStream, err)
		}
		applyExtra(&ss.cfg, cur, "udp")
		s := &flowStream{id: streamID(i), send: send, udp: true, conn: cur, fast: setupUDP(cur, &ss.cfg, send), peer: from}
		ss.t.eng.streams = append(ss.t.eng.streams, s)
		cur = next
	}
	_ = cur.Close()
	return nil
}

// listenUDP binds a UDP socket on laddr (SO_REUSEADDR, as
// the streams before it still hold the port) and tracks it for abort.
func (ss *serverSession) listenUDP(ctx context.Context, laddr *net.TCPAddr) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			if serr = reuseAddr(fd); serr == nil {
				serr = bindToDevice(fd, ss.srv.cfg.BindDevice)
			}
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(ctx, "udp", laddr.String())
	if err != nil {
		return nil, fmt.Errorf("throughput: udp listen %s: %w", laddr, err)
	}
	uc := pc.(*net.UDPConn)
	if !ss.track(uc) {
		return nil, fmt.Errorf("throughput: udp listen %s: %w", laddr, net.ErrClosed)
	}
	return uc, nil
}

// awaitHello reads until a hello from ip arrives; stray datagrams are
// skipped (the client retries lost hellos).
func awaitHello(ctx context.Context, uc *net.UDPConn, ip net.IP, deadline time.Time) (*net.UDPAddr, error) {
	buf := make([]byte, 64)
	_ = uc.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = uc.SetReadDeadline(time.Now().Add(-time.Second)) })
	defer stop()
	for {
		n, from, err := uc.ReadFromUDP(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if from.IP.Equal(ip) && iperfwire.IsConnectMsg(buf[:n]) {
			return from, nil
		}
	}
}

// answerHello connects uc to the client's address, with the client's flow
// label when it sent one (a label the kernel refuses leaves a note: 3.21's
// server labels nothing), and replies to its hello.
func (ss *serverSession) answerHello(uc *net.UDPConn, from *net.UDPAddr) error {
	labelled := false
	if ss.cfg.FlowLabel != 0 && flowLabelAvailable {
		var err error
		if labelled, err = labelUDP(uc, from, ss.cfg.FlowLabel); err != nil {
			ss.t.note(fmt.Sprintf("flowlabel: this server's UDP streams go without it (%v)", err))
		} else if !labelled {
			ss.t.note(noteFlowLabelIPv4)
		}
	}
	if !labelled {
		rc, err := uc.SyscallConn()
		if err == nil {
			var cerr error
			err = rc.Control(func(fd uintptr) { cerr = connectFD(fd, from) })
			if err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("throughput: udp connect %v: %w", from, err)
		}
	}
	_ = uc.SetWriteDeadline(time.Now().Add(ss.cfg.IOTimeout))
	if _, err := uc.Write(iperfwire.HelloReply()); err != nil {
		return fmt.Errorf("throughput: udp hello reply: %w", err)
	}
	_ = uc.SetReadDeadline(time.Time{})
	return nil
}
