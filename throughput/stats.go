package throughput

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// reason classifies a refused or failed session: SessionError.Reason and
// the keys of ServerStats.Failed are one of these strings.
type reason = string

// The reasons a session fails, as SessionError.Reason spells them.
const (
	// reasonBadCookie: a data connection whose cookie matches no test that
	// is accepting streams.
	reasonBadCookie reason = "bad_cookie"
	// reasonBadParams: the parameters were unreadable, malformed or too large.
	reasonBadParams reason = "bad_params"
	// reasonLimit: a limit refused the test (duration, streams, rate, block
	// or window size, MaxTests tests already running, or a CPU outside the
	// server's own that Config.ServerAffinity asked for).
	reasonLimit reason = "limit_exceeded"
	// reasonDenied: the client was refused before the test (reserved for
	// allow-lists and authentication).
	reasonDenied reason = "access_denied"
	// reasonTimeout: the peer went silent past HandshakeTimeout or IOTimeout.
	reasonTimeout reason = "timeout"
	// reasonPeerGone: the peer closed or reset a connection mid-session.
	reasonPeerGone reason = "peer_vanished"
	// reasonCanceled: Serve's context ended the session.
	reasonCanceled reason = "canceled"
	// reasonProtocol: the peer broke the protocol (an unexpected state,
	// malformed results).
	reasonProtocol reason = "protocol_error"
	// reasonStream: a data stream could not be set up or failed.
	reasonStream reason = "stream_failed"
	// reasonUnsupported: the test needs what this listener cannot give
	// (UDP tests on a non-TCP listener).
	reasonUnsupported reason = "unsupported"
)

// SessionError is a refused or failed connection or test, as
// ServerConfig.OnFailure receives it.
type SessionError struct {
	Remote net.Addr // the peer's address (nil when unknown)
	// Reason classifies the failure, one of "bad_cookie" (a data
	// connection whose cookie matches no test), "bad_params" (unreadable
	// or too large parameters), "limit_exceeded" (a limit refused the
	// test), "access_denied" (AllowedClients or authentication),
	// "timeout" (the peer went silent), "peer_vanished", "canceled"
	// (Serve's context ended the session), "protocol_error",
	// "stream_failed" (a data stream failed) or "unsupported" (a UDP test
	// on a non-TCP listener). errors.Is matches Err against the package's
	// errors.
	Reason string
	Err    error
}

func (e *SessionError) Error() string {
	cause := "<nil>"
	if e.Err != nil {
		cause = e.Err.Error()
	}
	return "throughput: session from " + addrString(e.Remote) + ": " + e.Reason + ": " + cause
}

// Unwrap returns the cause, so errors.Is sees ErrLimit, ErrProtocol, context.Canceled...
func (e *SessionError) Unwrap() error { return e.Err }

// ServerStats counts what a Server has seen since it was made. The counts
// are cumulative.
type ServerStats struct {
	// Started counts control connections that began a test's handshake.
	Started int64 `json:"started"`
	// Completed counts tests that ran and exchanged results. A test counts
	// from the moment the server hands the client its results, so a
	// client whose Run returned without error finds its test here; a test
	// that then fails after all (a data sink that fails on closing) moves
	// to Failed once the server is done with it.
	Completed int64 `json:"completed"`
	// Failed counts refused or failed connections and tests by reason.
	Failed map[string]int64 `json:"failed"`
}

type serverCounters struct {
	started, completed atomic.Int64
	mu                 sync.Mutex
	failed             map[reason]int64
}

// Stats returns the server's counters (zero for a zero Server).
func (s *Server) Stats() ServerStats {
	if s == nil {
		return ServerStats{Failed: map[reason]int64{}}
	}
	st := ServerStats{Started: s.stats.started.Load(), Completed: s.stats.completed.Load(), Failed: map[reason]int64{}}
	s.stats.mu.Lock()
	for r, n := range s.stats.failed {
		st.Failed[r] = n
	}
	s.stats.mu.Unlock()
	return st
}

// failed counts a failure and reports it to the hook; an empty reason is
// classified from err.
func (s *Server) failed(conn net.Conn, r reason, err error) {
	if r == "" {
		r = classify(err)
	}
	s.stats.mu.Lock()
	if s.stats.failed == nil {
		s.stats.failed = map[reason]int64{}
	}
	s.stats.failed[r]++
	s.stats.mu.Unlock()
	if s.cfg.OnFailure != nil {
		remote := conn.RemoteAddr()
		s.cfg.OnFailure(remote, &SessionError{Remote: remote, Reason: r, Err: err})
	}
}

// reason classifies a session's error; a cancel of Serve's context wins.
func (ss *serverSession) reason(ctx context.Context, err error) reason {
	if ctx.Err() != nil {
		return reasonCanceled
	}
	return classify(err)
}

// reasonError carries the reason a failure site knows.
type reasonError struct {
	reason reason
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// errTimeout marks a step that ran out of time.
var errTimeout = os.ErrDeadlineExceeded

func classify(err error) reason {
	var re *reasonError
	switch {
	case errors.As(err, &re) && re.reason != "":
		return re.reason
	case errors.Is(err, context.Canceled):
		return reasonCanceled
	case isTimeout(err) || errors.Is(err, os.ErrDeadlineExceeded):
		return reasonTimeout
	case errors.Is(err, ErrLimit):
		return reasonLimit
	case errors.Is(err, ErrProtocol):
		return reasonProtocol
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed):
		return reasonPeerGone
	}
	return reasonStream
}
