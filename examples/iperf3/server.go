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

	"github.com/netperfkit/netperfkit/throughput"
)

const banner = "-----------------------------------------------------------\n"

func serve(ctx context.Context, o *options, out, errOut io.Writer) int {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.port)))
	if err != nil {
		fmt.Fprintf(errOut, "iperf3: error - unable to start listener for connections: %v\n", err)
		fmt.Fprintf(errOut, "iperf3: exiting\n")
		return 1
	}
	srv, err := throughput.NewServer(serverConfig(o, out, errOut))
	if err != nil {
		_ = ln.Close()
		fmt.Fprintf(errOut, "iperf3: error - %v\n", err)
		return 1
	}
	err = srv.Serve(ctx, ln)
	var sig *signalError
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(errOut, "iperf3: interrupt - the server has terminated %s\n", sig.describe())
		return 0
	}
	if err != nil {
		fmt.Fprintf(errOut, "iperf3: error - %v\n", err)
		return 1
	}
	return 0
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
		AllowedClients: o.allowedClients, MaxTestsPerClient: o.maxTestsPerClient, RecvTimeout: o.rcvTimeout}
	if o.oneOff {
		// Without -1, 3.21's --idle-timeout restarts its one test slot,
		// which this server does not need; with it, the server exits.
		cfg.IdleTimeout = o.idleTimeout
	}
	cfg.OnFailure = func(e *throughput.SessionError) {
		switch {
		case errors.Is(e.Err, throughput.ErrAuthFailed):
			fmt.Fprintf(errOut, "iperf3: error - test authorization failed\n")
		case errors.Is(e.Err, throughput.ErrRecvIdle):
			fmt.Fprintf(errOut, "iperf3: error - idle timeout for receiving data\n")
		case o.verbose && (e.Reason == throughput.ReasonDenied || e.Reason == throughput.ReasonLimit):
			fmt.Fprintf(errOut, "iperf3: refused %v: %v\n", e.Remote, e.Err)
		}
	}
	cfg.OnResult = func(r *throughput.Result) {
		mu.Lock()
		defer mu.Unlock()
		serverReport(o, r, out)
		tests++
		if !o.oneOff {
			listening()
		}
	}
	return cfg
}

// serverReport prints one finished test from the server's side. The
// library reports a server's test only when it ends (it has no live server
// events yet), so the whole report comes at once.
func serverReport(o *options, r *throughput.Result, out io.Writer) {
	switch {
	case o.jsonStream:
		js := &jsonStream{w: out, skel: *r}
		js.skel.Intervals, js.skel.Streams = nil, nil
		for _, iv := range r.Intervals {
			js.interval(iv)
		}
		js.end(r)
		return
	case o.json:
		printJSON(out, r, nil)
		return
	}
	h, p := hostPort(r.RemoteAddr)
	fmt.Fprintf(out, "Accepted connection from %s, port %d\n", h, p)
	so := *o
	so.cfg = r.Config
	txt := newTextReport(out, &so)
	for _, s := range r.Streams {
		if s.LocalAddr != "" {
			txt.connected(s)
		}
	}
	for _, iv := range r.Intervals {
		txt.interval(iv)
	}
	txt.summary(r)
}

// applyDataPath carries iperf3 3.19+'s data-path options into the test's
// Config: the client sends them to the server in 3.21's parameters.
func applyDataPath(o *options) {
	o.cfg.ZeroCopy = o.zerocopy
	o.cfg.SkipRxCopy = o.skipRxCopy
	if o.gsro {
		o.cfg.GSO, o.cfg.GRO = throughput.OffloadOn, throughput.OffloadOn
	}
	o.cfg.FQRate = o.fqRate
}

// warnNotNeeded says which options were taken and change nothing here.
func warnNotNeeded(o *options, errOut io.Writer) {
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
		pub, err := throughput.ParseRSAPublicKey(pem)
		if err != nil {
			return errors.Join(err, errClientAuth)
		}
		pw, ok := os.LookupEnv("IPERF3_PASSWORD")
		if !ok {
			return errors.Join(errors.New("IPERF3_PASSWORD is not set (this tool does not prompt for a password)"), errClientAuth)
		}
		o.cfg.Auth = &throughput.ClientAuth{User: o.username, Password: pw, PublicKey: pub}
	case o.server && o.rsaPrivateKeyPath != "":
		if _, err := os.Stat(o.authorizedUsersPath); err != nil {
			return errors.Join(err, perr("cannot access authorized users file"))
		}
		pem, err := os.ReadFile(o.rsaPrivateKeyPath)
		if err != nil {
			return errors.Join(err, errServerAuth)
		}
		key, err := throughput.ParseRSAPrivateKey(pem)
		if err != nil {
			return errors.Join(err, errServerAuth)
		}
		o.serverAuth = &throughput.ServerAuth{PrivateKey: key, UsersPath: o.authorizedUsersPath,
			SkewThreshold: o.skewThreshold, PKCS1Padding: o.usePKCS1Padding}
	}
	return nil
}
