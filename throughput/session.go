package throughput

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// session is one test seen from either end. The skeleton -- handshake,
// data streams, the test, results, teardown -- and the cancellation rule
// live here once; client and server differ only in the steps behind side.
//
// Cancellation: when ctx ends, abort tells the peer (CLIENT_TERMINATE or
// SERVER_TERMINATE) and closes the control connection and every data
// connection, so whatever step is blocked returns at once; deadlines are
// only for peers that go silent.
type session struct {
	server bool
	ctrl   net.Conn
	cfg    Config // settled by the handshake
	cookie []byte
	t      *testRun // set once the handshake settled cfg

	ended atomic.Bool // the test's time is over: a silent control connection is now an error

	mu      sync.Mutex
	conns   []io.Closer
	aborted bool
}

// side is what differs between the client's and the server's run of a test.
type side interface {
	// handshake runs from connect until the settings are agreed (s.cfg).
	handshake(ctx context.Context) error
	// openStreams sets up the data streams (s.t.eng.streams).
	openStreams(ctx context.Context) error
	// started exchanges TEST_START and TEST_RUNNING.
	started() error
	// await blocks while the test runs and returns when its time is up.
	await(ctx context.Context, states <-chan stateMsg) error
	// exchange runs from the end of the test to both results objects.
	exchange(states <-chan stateMsg) (*iperfwire.Results, error)
	// finish completes the protocol and fills in what only this side knows.
	finish(res *Result, remote *iperfwire.Results) error
}

// track registers c to be closed by abort; after an abort it closes c at
// once and reports false.
func (s *session) track(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		_ = c.Close()
		return false
	}
	s.conns = append(s.conns, c)
	return true
}

// abort ends the session from another goroutine: it tells the peer, then
// closes everything, which unblocks every read and write in progress.
func (s *session) abort() {
	bye := iperfwire.ClientTerminate
	if s.server {
		bye = iperfwire.ServerTerminate
	}
	_ = iperfwire.WriteState(s.ctrl, bye, 50*time.Millisecond)
	s.closeAll()
}

// closeAll closes the control connection and every tracked one; later
// track calls close theirs at once.
func (s *session) closeAll() {
	s.mu.Lock()
	s.aborted = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	_ = s.ctrl.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}

// run drives a test through sd and returns its result, partial when it
// fails or ctx ends (then with ctx's error).
func (s *session) run(ctx context.Context, sd side) (*Result, error) {
	stop := context.AfterFunc(ctx, s.abort)
	defer stop()
	defer s.closeAll()
	setNoDelay(s.ctrl)
	res, err := s.steps(ctx, sd)
	if err == nil && s.t != nil {
		err = s.t.eng.dataFailure() // a sink that failed after the test's time, or on closing
	}
	if res == nil {
		res = s.partial()
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("throughput: %w", ctx.Err())
	}
	s.finalEvents(res, err)
	return res, err
}

func (s *session) steps(ctx context.Context, sd side) (*Result, error) {
	if err := sd.handshake(ctx); err != nil {
		return nil, err
	}
	s.t = newTestRun(&s.cfg, s.server)
	if ta, ok := s.ctrl.LocalAddr().(*net.TCPAddr); ok {
		s.t.localIP = ta.IP
	}
	s.t.onStart = func() { s.event(Event{Kind: EventStart, Result: s.startResult()}) }
	s.t.onInterval = func(iv Interval) { s.event(Event{Kind: EventInterval, Interval: &iv}) }
	defer s.closeStreams()
	for _, n := range optsNotAvailable(sockOpts{mss: s.cfg.MSS, congestion: s.cfg.Congestion}) {
		s.t.note(n)
	}
	for _, n := range ipOptsNotAvailable(&s.cfg) {
		s.t.note(n)
	}
	for _, n := range dataPathNotAvailable(&s.cfg) {
		s.t.note(n)
	}
	if err := sd.openStreams(ctx); err != nil {
		return nil, err
	}
	for _, n := range s.t.eng.dataNotes() {
		s.t.note(n)
	}
	if err := sd.started(); err != nil {
		return nil, err
	}
	states := make(chan stateMsg, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watch(states)
	}()
	defer func() {
		_ = s.ctrl.Close()
		<-watched
	}()
	if err := s.measure(ctx, sd, states); err != nil {
		s.t.note(notExchanged(ctx))
		return s.result(nil), err
	}
	remote, err := sd.exchange(states)
	if err != nil {
		s.t.note(notExchanged(ctx))
		return s.result(nil), err
	}
	res := s.result(remote)
	return res, sd.finish(res, remote)
}

// notExchanged is the note of a test that ended before the results
// exchange: the peer's counts (what it received of this side's data, what
// it sent of its own) never arrived, so they read 0, which is not the
// peer's count (issue 39).
func notExchanged(ctx context.Context) string {
	why := "the test failed"
	if ctx.Err() != nil {
		why = "the test was cancelled"
	}
	return "results: the peer's counts were not exchanged because " + why +
		" before the exchange; what the peer received of this side's data (and sent of its own) reads 0: unknown, not none"
}

// result is the test's Result with the session's addresses and cookie.
func (s *session) result(remote *iperfwire.Results) *Result {
	res := s.t.result(remote)
	res.LocalAddr, res.RemoteAddr = addrString(s.ctrl.LocalAddr()), addrString(s.ctrl.RemoteAddr())
	res.Cookie = s.cookieString()
	res.ControlMSS = connMSS(s.ctrl)
	return res
}

func (s *session) cookieString() string { return iperfwire.CookieString(s.cookie) }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// measure runs the data streams until the side says the test's time is
// up, then freezes the counters.
func (s *session) measure(ctx context.Context, sd side, states <-chan stateMsg) error {
	stopRep := s.t.begin()
	err := sd.await(ctx, states)
	s.t.end(ctx, stopRep, s.server && err == nil)
	s.ended.Store(true)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// partial is the Result of a session that ended before its test ran.
func (s *session) partial() *Result {
	if s.t != nil && !s.t.startT.IsZero() {
		return s.result(nil)
	}
	r := &Result{Role: role(s.server), Config: withoutHooks(&s.cfg), Cookie: iperfwire.CookieString(s.cookie),
		LocalAddr: addrString(s.ctrl.LocalAddr()), RemoteAddr: addrString(s.ctrl.RemoteAddr())}
	return r
}

// closeStreams stops the engine and closes the data streams.
func (s *session) closeStreams() {
	s.t.eng.stop()
	s.t.ledgerClose()
	s.t.eng.closeAll()
}

type stateMsg struct {
	s   iperfwire.State
	err error
}

// watch reads the one state the peer sends while the test runs (the
// server's EXCHANGE_RESULTS or an early error; the client's TEST_END) and
// delivers it, with SERVER_ERROR's codes, on states. Until the test's time
// is over a silent peer is normal: the data flows elsewhere.
func (s *session) watch(states chan<- stateMsg) {
	for {
		st, err := iperfwire.ReadState(s.ctrl, s.cfg.IOTimeout)
		if err != nil && isTimeout(err) && !s.ended.Load() {
			continue
		}
		if err == nil && st == iperfwire.ServerError && !s.server {
			err = readServerError(s.ctrl, s.cfg.IOTimeout)
		}
		states <- stateMsg{s: st, err: err}
		return
	}
}
