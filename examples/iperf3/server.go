package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

const banner = "-----------------------------------------------------------\n"

func serve(ctx context.Context, o *options, out, errOut io.Writer) int {
	ln, err := listenConfig(o).Listen(ctx, "tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.port)))
	if err != nil {
		msg := "error - unable to start listener for connections: " + errnoText(err)
		switch {
		case o.jsonStream:
			js := iperf3fmt.NewJSONStream(out, 0, nil)
			js.Error(msg)
			js.End(nil)
		case o.json:
			printErrorJSON(out, o, msg)
		default:
			fmt.Fprintf(errOut, "iperf3: %s\n", msg)
			fmt.Fprintf(errOut, "iperf3: exiting\n")
		}
		return 1
	}
	srv, err := throughput.NewServer(serverConfig(o, out, errOut))
	if err != nil {
		_ = ln.Close()
		fmt.Fprintf(errOut, "iperf3: error - %s\n", iperfMessage(err))
		return 1
	}
	err = srv.Serve(ctx, ln)
	var sig *signalError
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(errOut, "iperf3: interrupt - the server has terminated %s\n", sig.describe())
		return 0
	}
	if err != nil && ctx.Err() == nil { // a stop the caller asked for is no error
		fmt.Fprintf(errOut, "iperf3: error - %s\n", iperfMessage(err))
		return 1
	}
	return 0
}

// listenConfig is the server's listener: MPTCP (-m), keepalive on the
// accepted connections (--cntl-ka; 3.21 sets it on the control connection
// only, here TCP data streams get it too, which an active stream never
// triggers) and SO_BINDTODEVICE (--bind-dev, linux).
func listenConfig(o *options) *net.ListenConfig {
	lc := &net.ListenConfig{}
	if o.mptcp {
		lc.SetMultipathTCP(true)
	}
	if o.cntlKA {
		lc.KeepAliveConfig = keepAlive(o)
	}
	if o.bindDev != "" {
		lc.Control = bindToDevice(o.bindDev)
	}
	return lc
}

// keepAlive is --cntl-ka's KEEPIDLE/KEEPINTV/KEEPCNT as Go's settings.
func keepAlive(o *options) net.KeepAliveConfig {
	// 3.21's 0 is the system's value; Go leaves a negative one alone.
	sys := func(v int) int {
		if v == 0 {
			return -1
		}
		return v
	}
	return net.KeepAliveConfig{Enable: true, Idle: time.Duration(sys(o.kaIdle)) * time.Second,
		Interval: time.Duration(sys(o.kaIntv)) * time.Second, Count: sys(o.kaCount)}
}

// serverConfig is the library's server for the options: 3.21's banner
// before each test, the server's report after it, and its words for a
// failed authentication.
func serverConfig(o *options, out, errOut io.Writer) *throughput.ServerConfig {
	var (
		mu    sync.Mutex
		tests = 1
	)
	listening := func() {
		if !o.json {
			fmt.Fprintf(out, "%sServer listening on %d (test #%d)\n%s", banner, o.port, tests, banner)
		}
	}
	listening()
	cfg := &throughput.ServerConfig{MaxDuration: o.serverMaxDuration, Auth: o.serverAuth, OneOff: o.oneOff,
		AllowedClients: o.allowedClients, MaxTestsPerClient: o.maxTestsPerClient, RecvTimeout: o.rcvTimeout,
		MaxTests: o.maxTests, SocketOptions: throughput.SocketOptions{StreamThreads: o.streamThreads,
			BindDevice: o.bindDev, JitterRead: o.jitterRead},
		// "/0" (which 3.21 takes, and then ends every test at its first
		// interval, dividing by a zero window) is the default window here.
		MaxTotalBitrate: o.serverRate, TotalBitrateWindow: o.serverRateWin,
		// -i is the server's own reporting interval, as in 3.21 (0: 1 s).
		Interval: o.cfg.Interval}
	serverFile(o, cfg)
	if o.oneOff {
		// Without -1, 3.21's --idle-timeout restarts its one test slot,
		// which this server does not need; with it, the server exits.
		cfg.IdleTimeout = o.idleTimeout
	}
	dbg := newDebugLog(out, o.debug, "server")
	cfg.OnFailure = func(remote net.Addr, err error) {
		var e *throughput.SessionError
		if !errors.As(err, &e) { // OnFailure always passes one
			e = &throughput.SessionError{Remote: remote, Reason: "stream_failed", Err: err}
		}
		dbg.failure(e)
		switch {
		case errors.Is(e.Err, throughput.ErrAuthFailed):
			fmt.Fprintf(errOut, "iperf3: error - test authorization failed\n")
		case errors.Is(e.Err, throughput.ErrRecvIdle):
			fmt.Fprintf(errOut, "iperf3: error - idle timeout for receiving data\n")
		case errors.Is(e.Err, throughput.ErrTotalRate):
			fmt.Fprintf(errOut, "iperf3: error - %s\n", msgTotalRate)
		case errors.As(e.Err, new(*fileError)):
			fmt.Fprintf(errOut, "iperf3: error - %s\n", iperfMessage(e.Err))
		case errors.Is(e.Err, throughput.ErrDataNeedsTCP):
			fmt.Fprintf(errOut, "iperf3: error - %s\n", serverErrors[34].text)
		case errors.Is(e.Err, throughput.ErrAffinity):
			var errno syscall.Errno
			if !errors.As(e.Err, &errno) {
				errno = syscall.EINVAL
			}
			fmt.Fprintf(errOut, "iperf3: error - %s: %s\n", msgAffinity, strerror(errno))
		case o.verbose && (e.Reason == "access_denied" || e.Reason == "limit_exceeded"):
			fmt.Fprintf(errOut, "iperf3: refused %v: %v\n", e.Remote, e.Err)
		}
	}
	live := &liveReports{o: o, out: out, tests: map[string]*liveReport{}}
	cfg.OnEvent = func(e throughput.Event) {
		dbg.event(e)
		live.event(e)
	}
	cfg.OnResult = func(res throughput.Result) {
		r := &res
		mu.Lock()
		defer mu.Unlock()
		if o.json && !o.jsonStream {
			printJSON(out, r, "") // -J prints one document when the test ends, as 3.21
		}
		tests++
		if !o.oneOff {
			listening()
		}
	}
	return cfg
}

// liveReports prints each test's report on the server as it runs, as
// 3.21's server does: the accepted connection and the streams when they
// connect, an interval line each interval, the summary at the end. Tests
// that run at the same time each keep their own report (by cookie); their
// lines interleave, as they would from concurrent iperf3 servers.
type liveReports struct {
	o     *options
	out   io.Writer
	mu    sync.Mutex
	tests map[string]*liveReport
}

// liveReport is one running test's text or --json-stream report.
type liveReport struct {
	txt *iperf3fmt.TextReport
	js  *iperf3fmt.JSONStream
}

func (l *liveReports) event(e throughput.Event) {
	if l.o.json && !l.o.jsonStream {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rep := l.tests[e.Cookie]
	if e.Kind == throughput.EventStart {
		rep = l.start(e.Result)
		l.tests[e.Cookie] = rep
		return
	}
	if rep == nil {
		return // a test that failed before it started prints no report
	}
	switch e.Kind {
	case throughput.EventInterval:
		if rep.js != nil {
			rep.js.Interval(*e.Interval)
		} else {
			rep.txt.Interval(*e.Interval)
		}
	case throughput.EventError:
		if rep.js != nil {
			rep.js.Error("error - " + iperfMessage(e.Err))
		}
	case throughput.EventEnd:
		delete(l.tests, e.Cookie)
		if rep.js != nil {
			rep.js.End(e.Result)
		} else {
			rep.txt.Summary(e.Result)
		}
	}
}

// start prints a test's opening lines and returns its report.
func (l *liveReports) start(r *throughput.Result) *liveReport {
	if l.o.jsonStream {
		js := iperf3fmt.NewJSONStream(l.out, r.Config.Interval, nil)
		js.Start(r)
		return &liveReport{js: js}
	}
	h, p := hostPort(r.RemoteAddr)
	fmt.Fprintf(l.out, "Accepted connection from %s, port %d\n", h, p)
	so := *l.o
	so.cfg = r.Config
	txt := newTextReport(l.out, &so)
	for _, s := range r.Streams {
		if s.LocalAddr != "" {
			txt.Connected(s)
		}
	}
	return &liveReport{txt: txt}
}

// applyDataPath carries iperf3 3.19+'s data-path options into the test's
// Config: the client sends them to the server in 3.21's parameters.
func applyDataPath(o *options) {
	o.cfg.ZeroCopy = o.zerocopy
	o.cfg.SkipRxCopy = o.skipRxCopy
	if o.gsro {
		o.cfg.GSO, o.cfg.GRO = new(true), new(true)
	}
	o.cfg.FQRate = o.fqRate
}

// warnNotNeeded says which options were taken and change nothing here.
func warnNotNeeded(o *options, errOut io.Writer) {
	if o.noFQPacing {
		// 3.21's words (it prints them on stdout, while parsing).
		fmt.Fprintf(errOut, "Warning:  --no-fq-socket-pacing is deprecated\n")
		o.cfg.FQRate = 0
	}
	if o.pacingTimer != 0 {
		fmt.Fprintf(errOut, "iperf3: warning - --pacing-timer is accepted and not needed: netperfkit paces every write\n")
	}
	if o.dontFragment && !o.cfg.UDP {
		fmt.Fprintf(errOut, "iperf3: warning - --dont-fragment applies to UDP tests only\n")
	}
}

// loadAuth loads the authentication settings as 3.21 does at start-up (so
// a bad key or users file is reported the same way) into the client's
// Config or the server's ServerAuth.
func loadAuth(o *options) error {
	switch {
	case o.client && o.username != "":
		pem, err := os.ReadFile(o.rsaPublicKeyPath)
		if err != nil {
			return errors.Join(err, errClientAuth)
		}
		pub, err := iperf3auth.ParsePublicKey(pem)
		if err != nil {
			return errors.Join(err, errClientAuth)
		}
		pw, ok := os.LookupEnv("IPERF3_PASSWORD")
		if !ok {
			return errors.Join(errors.New("IPERF3_PASSWORD is not set (this tool does not prompt for a password)"), errClientAuth)
		}
		o.cfg.Auth = &iperf3auth.Client{User: o.username, Password: pw, PublicKey: pub}
	case o.server && o.rsaPrivateKeyPath != "":
		if _, err := os.Stat(o.authorizedUsersPath); err != nil {
			return errors.Join(err, perr("cannot access authorized users file"))
		}
		pem, err := os.ReadFile(o.rsaPrivateKeyPath)
		if err != nil {
			return errors.Join(err, errServerAuth)
		}
		key, err := iperf3auth.ParsePrivateKey(pem)
		if err != nil {
			return errors.Join(err, errServerAuth)
		}
		o.serverAuth = &iperf3auth.Server{PrivateKey: key, UsersPath: o.authorizedUsersPath,
			SkewThreshold: o.skewThreshold, PKCS1Padding: o.usePKCS1Padding}
	}
	return nil
}
