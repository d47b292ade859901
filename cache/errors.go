package cache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
)

// Phase names one step of setting up and using a connection.
type Phase string

// The phases a probe times, in order. A phase that does not apply (DNS for an
// IP address, TLS without TLS, AUTH without credentials, CLUSTER SLOTS outside
// cluster mode) does not happen and reports zero.
const (
	PhaseDNS          Phase = "dns"
	PhaseConnect      Phase = "connect"
	PhaseTLS          Phase = "tls"
	PhaseAuth         Phase = "auth"
	PhaseClusterSlots Phase = "cluster_slots"
	PhaseCommand      Phase = "command"
	PhaseClose        Phase = "close"
)

// ErrorKind classifies a failure. Every ErrorKind is also an error, so that
// errors.Is(err, cache.ErrWrongPass) tests a classified *Error; the *Error
// says "cache: " and the phase in its message, and the kind alone reads as
// itself, so that ErrorsByKind prints as map[connect_refused:3].
type ErrorKind string

// Error implements error: the kind alone ("connect_refused").
func (k ErrorKind) Error() string { return string(k) }

// Error kinds. The connection-phase kinds are the prober's; the workload runner
// uses the same kinds and, for the glide engine, the coarser ErrTimeout,
// ErrConnection, ErrClosing, ErrRecovery and ErrServer.
const (
	ErrDNS            ErrorKind = "dns"             // name resolution failed
	ErrConnectRefused ErrorKind = "connect_refused" // nothing listens (ECONNREFUSED), or the server reset the connection during set-up
	ErrConnectTimeout ErrorKind = "connect_timeout" // TCP connect did not finish in time (ConnectTimeout or ctx's deadline)
	ErrConnect        ErrorKind = "connect"         // other TCP connect failures (unreachable...)
	ErrTLSVerify      ErrorKind = "tls_verify"      // the server certificate did not verify
	ErrTLSHandshake   ErrorKind = "tls_handshake"   // any other TLS handshake failure
	ErrWrongPass      ErrorKind = "auth_wrongpass"  // WRONGPASS: bad user name or password/token
	ErrNoAuth         ErrorKind = "auth_noauth"     // NOAUTH: the server wants AUTH and got none
	ErrAuth           ErrorKind = "auth"            // other AUTH failures, including Endpoint.Credentials errors
	ErrCluster        ErrorKind = "cluster"         // CLUSTER SLOTS failed or routing could not settle
	ErrCommand        ErrorKind = "command"         // the server answered the command with an error
	ErrTimeout        ErrorKind = "timeout"         // a read, write or request timed out, or ctx's deadline passed outside the TCP connect
	ErrConnection     ErrorKind = "connection"      // the connection broke (reset, EOF, protocol)
	ErrClosing        ErrorKind = "closing"         // the client was closed under the operation
	ErrRecovery       ErrorKind = "recovery"        // the client was reconnecting ("Connection in recovery")
	ErrServer         ErrorKind = "server_error"    // any other error reported by the client library
	ErrCanceled       ErrorKind = "canceled"        // the caller's context ended
)

// ErrInvalidConfig is wrapped by every error about a configuration: an
// Endpoint, WorkloadConfig or ProbeConfig field out of range (the message
// names the field and its value in the field's own unit), and cache/median's
// Config.
var ErrInvalidConfig = errors.New("cache: invalid configuration")

// invalid returns an error wrapping ErrInvalidConfig.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// errCredentials is wrapped by the errors of Endpoint.Credentials.
var errCredentials = errors.New("cache: credentials")

// Error is a classified failure of one probe or operation, the one error
// type of the package. errors.Is(err, k) with an ErrorKind k reports whether
// Kind == k; Unwrap gives the cause, so errors.Is(err, syscall.ECONNREFUSED)
// works too. An error reply of the server (WRONGPASS, MOVED, ERR...) is
// classified by its first word and its text is in Error's message.
type Error struct {
	Phase Phase     // where it happened
	Kind  ErrorKind // what happened
	Addr  string    // the node address involved, when known
	Err   error     // the cause
}

func (e *Error) Error() string {
	if e == nil {
		return "cache: <nil>"
	}
	s := "cache: " + string(e.Phase) + ": " + string(e.Kind)
	if e.Addr != "" {
		s += " (" + e.Addr + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether target is e's ErrorKind.
func (e *Error) Is(target error) bool {
	k, ok := target.(ErrorKind)
	return ok && e != nil && k == e.Kind
}

// replyError is an error reply from the server, such as
// "WRONGPASS invalid username-password pair" or "MOVED 3999 127.0.0.1:6381".
type replyError struct {
	Msg string
}

func (e *replyError) Error() string { return "cache: server replied: " + e.Msg }

// code returns the first word of the reply ("WRONGPASS", "NOAUTH", "MOVED",
// "ERR"...).
func (e *replyError) code() string {
	code, _, _ := strings.Cut(e.Msg, " ")
	return code
}

// kindOf returns the ErrorKind of a classified error, or "" when err is nil or
// not a *Error.
func kindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// classify wraps err, which happened in phase, into an *Error. An *Error is
// returned unchanged.
func classify(phase Phase, addr string, err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Phase: phase, Kind: kindFor(phase, err), Addr: addr, Err: err}
}

func kindFor(phase Phase, err error) ErrorKind {
	var se *replyError
	if errors.As(err, &se) {
		switch code := se.code(); {
		case code == "NOAUTH":
			return ErrNoAuth
		case code == "WRONGPASS":
			return ErrWrongPass
		case phase == PhaseAuth:
			return ErrAuth
		case phase == PhaseClusterSlots:
			return ErrCluster
		case code == "CLUSTERDOWN" || code == "TRYAGAIN" || code == "MOVED" || code == "ASK":
			return ErrCluster
		default:
			return ErrCommand
		}
	}
	if errors.Is(err, context.Canceled) {
		return ErrCanceled
	}
	if errors.Is(err, net.ErrClosed) {
		return ErrClosing
	}
	timeout := isTimeout(err)
	var dnsErr *net.DNSError
	if phase != PhaseConnect && errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &dnsErr) {
		// The caller's deadline (ctxCause gives it bare) is a timeout in
		// every phase but connect, which has ErrConnectTimeout. A lookup
		// that ran out of the connect timeout is a DNSError and stays
		// ErrDNS.
		return ErrTimeout
	}
	if isSetup(phase) && isReset(err) {
		// A reset while the connection is being set up (connect, TLS
		// handshake, AUTH) is a refusal in all but name: the server's kernel
		// tore the connection down before it was ever usable. Which errno
		// the client sees is a race it does not control: a connect to a
		// server that is going away gets ECONNREFUSED when the RST beats
		// the handshake, but ECONNRESET from the connect itself when the
		// handshake completed in the kernel and the RST arrived before the
		// dialler read SO_ERROR, and ECONNRESET or EPIPE in the next phase
		// when it arrived after (issue 15). The same happens when a load
		// balancer without healthy targets, or a full accept queue with
		// tcp_abort_on_overflow, resets connections. Reporting these as
		// refusals keeps one kind for "the server would not take the
		// connection"; Phase still says where it was seen. A connect that
		// times out or finds no route (ErrConnectTimeout, ErrConnect) never
		// reached a server and stays apart.
		return ErrConnectRefused
	}
	switch phase {
	case PhaseDNS:
		return ErrDNS
	case PhaseConnect:
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return ErrConnectRefused
		case timeout:
			return ErrConnectTimeout
		}
		return ErrConnect
	case PhaseTLS:
		if isVerifyError(err) {
			return ErrTLSVerify
		}
		return ErrTLSHandshake
	}
	switch {
	case timeout:
		return ErrTimeout
	case phase == PhaseAuth && errors.Is(err, errCredentials):
		return ErrAuth
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrConnectRefused
	}
	return ErrConnection
}

// isTimeout reports whether err is a deadline or timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isSetup reports whether phase is part of setting a connection up.
func isSetup(phase Phase) bool {
	return phase == PhaseConnect || phase == PhaseTLS || phase == PhaseAuth
}

// isReset reports whether err is the peer resetting or aborting the
// connection, or a write to a connection it reset.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}

func isVerifyError(err error) bool {
	var (
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		he x509.HostnameError
		ci x509.CertificateInvalidError
	)
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
