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

// Reason classifies a refused or failed session for ServerConfig.OnFailure
// and ServerStats.
type Reason string

// The reasons a session fails.
const (
	// ReasonBadCookie: a data connection whose cookie matches no test that
	// is accepting streams.
	ReasonBadCookie Reason = "bad_cookie"
	// ReasonBadParams: the parameters were unreadable, malformed or too large.
	ReasonBadParams Reason = "bad_params"
	// ReasonLimit: a limit refused the test (duration, streams, rate, block
	// or window size, MaxTests tests already running, or a CPU outside the
	// server's own that Config.ServerAffinity asked for).
	ReasonLimit Reason = "limit_exceeded"
	// ReasonDenied: the client was refused before the test (reserved for
	// allow-lists and authentication).
	ReasonDenied Reason = "access_denied"
	// ReasonTimeout: the peer went silent past HandshakeTimeout or IOTimeout.
	ReasonTimeout Reason = "timeout"
	// ReasonPeerGone: the peer closed or reset a connection mid-session.
	ReasonPeerGone Reason = "peer_vanished"
	// ReasonCanceled: Serve's context ended the session.
	ReasonCanceled Reason = "canceled"
	// ReasonProtocol: the peer broke the protocol (an unexpected state,
	// malformed results).
	ReasonProtocol Reason = "protocol_error"
	// ReasonStream: a data stream could not be set up or failed.
	ReasonStream Reason = "stream_failed"
	// ReasonUnsupported: the test needs what this listener cannot give
	// (UDP tests on a non-TCP listener).
	ReasonUnsupported Reason = "unsupported"
)

// SessionError is a refused or failed connection or test, as
// ServerConfig.OnFailure receives it.
type SessionError struct {
	Remote net.Addr // the peer's address (nil when unknown)
	Reason Reason
	Err    error
}

func (e *SessionError) Error() string {
	cause := "<nil>"
	if e.Err != nil {
		cause = e.Err.Error()
	}
	return "throughput: session from " + addrString(e.Remote) + ": " + string(e.Reason) + ": " + cause
}

// Unwrap returns the cause, so errors.Is sees ErrLimit, ErrProtocol, context.Canceled...
func (e *SessionError) Unwrap() error { return e.Err }

// ServerStats counts what a Server has seen since it was made. The counts
// are cumulative.
type ServerStats struct {
	// Started counts control connections that began a test's handshake.
	Started int64 `json:"started"`
	// Completed counts tests that ran and exchanged results.
	Completed int64 `json:"completed"`
	// Failed counts refused or failed connections and tests by reason.
	Failed map[Reason]int64 `json:"failed"`
}

type serverCounters struct {
	started, completed atomic.Int64
	mu                 sync.Mutex
	failed             map[Reason]int64
}

// Stats returns the server's counters (zero for a zero Server).
func (s *Server) Stats() ServerStats {
	if s == nil {
		return ServerStats{Failed: map[Reason]int64{}}
	}
	st := ServerStats{Started: s.stats.started.Load(), Completed: s.stats.completed.Load(), Failed: map[Reason]int64{}}
	s.stats.mu.Lock()
	for r, n := range s.stats.failed {
		st.Failed[r] = n
	}
	s.stats.mu.Unlock()
	return st
}

// failed counts a failure and reports it to the hook; an empty reason is
// classified from err.
func (s *Server) failed(conn net.Conn, r Reason, err error) {
	if r == "" {
		r = classify(err)
	}
	s.stats.mu.Lock()
	if s.stats.failed == nil {
		s.stats.failed = map[Reason]int64{}
	}
	s.stats.failed[r]++
	s.stats.mu.Unlock()
	if s.cfg.OnFailure != nil {
		remote := conn.RemoteAddr()
		s.cfg.OnFailure(remote, &SessionError{Remote: remote, Reason: r, Err: err})
	}
}

// reason classifies a session's error; a cancel of Serve's context wins.
func (ss *serverSession) reason(ctx context.Context, err error) Reason {
	if ctx.Err() != nil {
		return ReasonCanceled
	}
	return classify(err)
}

// reasonError carries the reason a failure site knows.
type reasonError struct {
	reason Reason
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// errTimeout marks a step that ran out of time.
var errTimeout = os.ErrDeadlineExceeded

func classify(err error) Reason {
	var re *reasonError
	switch {
	case errors.As(err, &re) && re.reason != "":
		return re.reason
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case isTimeout(err) || errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, ErrLimit):
		return ReasonLimit
	case errors.Is(err, ErrProtocol):
		return ReasonProtocol
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed):
		return ReasonPeerGone
	}
	return ReasonStream
}
