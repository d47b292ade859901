package cache

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/internal/resp"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	opErr := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	for _, tc := range []struct {
		phase Phase
		err   error
		want  ErrorKind
	}{
		{PhaseDNS, &net.DNSError{Err: "no such host", IsNotFound: true}, ErrDNS},
		{PhaseConnect, opErr(os.NewSyscallError("connect", syscall.ECONNREFUSED)), ErrConnectRefused},
		{PhaseConnect, opErr(timeoutErr{}), ErrConnectTimeout},
		// The caller's deadline: ErrConnectTimeout while connecting,
		// ErrTimeout in every other phase, as Probe documents; a lookup
		// that ran out of the connect timeout stays a DNS failure.
		{PhaseConnect, context.DeadlineExceeded, ErrConnectTimeout},
		{PhaseDNS, context.DeadlineExceeded, ErrTimeout},
		{PhaseTLS, context.DeadlineExceeded, ErrTimeout},
		{PhaseAuth, context.DeadlineExceeded, ErrTimeout},
		{PhaseClusterSlots, context.DeadlineExceeded, ErrTimeout},
		{PhaseCommand, context.DeadlineExceeded, ErrTimeout},
		{PhaseDNS, &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true, UnwrapErr: context.DeadlineExceeded}, ErrDNS},
		{PhaseTLS, opErr(timeoutErr{}), ErrTLSHandshake},
		{PhaseConnect, opErr(os.NewSyscallError("connect", syscall.ENETUNREACH)), ErrConnect},
		{PhaseConnect, opErr(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), ErrConnect},
		// A reset during set-up is a refusal (issue 15); after set-up it is a
		// broken connection.
		{PhaseConnect, opErr(os.NewSyscallError("connect", syscall.ECONNRESET)), ErrConnectRefused},
		{PhaseTLS, opErr(os.NewSyscallError("read", syscall.ECONNRESET)), ErrConnectRefused},
		{PhaseAuth, opErr(os.NewSyscallError("write", syscall.EPIPE)), ErrConnectRefused},
		{PhaseAuth, opErr(os.NewSyscallError("read", syscall.ECONNABORTED)), ErrConnectRefused},
		{PhaseCommand, opErr(os.NewSyscallError("read", syscall.ECONNRESET)), ErrConnection},
		{PhaseTLS, x509.UnknownAuthorityError{}, ErrTLSVerify},
		{PhaseTLS, fmt.Errorf("wrapped: %w", x509.HostnameError{Host: "x"}), ErrTLSVerify},
		{PhaseTLS, errors.New("tls: first record does not look like a TLS handshake"), ErrTLSHandshake},
		{PhaseTLS, io.EOF, ErrTLSHandshake},
		{PhaseAuth, &replyError{Msg: "WRONGPASS invalid username-password pair"}, ErrWrongPass},
		{PhaseAuth, &replyError{Msg: "ERR AUTH <password> called without any password configured"}, ErrAuth},
		{PhaseAuth, fmt.Errorf("%w: retrieve credentials", errCredentials), ErrAuth},
		{PhaseAuth, opErr(timeoutErr{}), ErrTimeout},
		{PhaseCommand, &replyError{Msg: "NOAUTH Authentication required."}, ErrNoAuth},
		{PhaseClusterSlots, &replyError{Msg: "ERR This instance has cluster support disabled"}, ErrCluster},
		{PhaseCommand, &replyError{Msg: "CLUSTERDOWN The cluster is down"}, ErrCluster},
		{PhaseCommand, &replyError{Msg: "WRONGTYPE Operation against a key"}, ErrCommand},
		{PhaseCommand, io.EOF, ErrConnection},
		{PhaseCommand, fmt.Errorf("read: %w", resp.ErrProtocol), ErrConnection},
		{PhaseCommand, os.ErrDeadlineExceeded, ErrTimeout},
		{PhaseCommand, net.ErrClosed, ErrClosing},
		{PhaseCommand, context.Canceled, ErrCanceled},
	} {
		err := classify(tc.phase, "a:1", tc.err)
		assert.Equal(t, tc.want, kindOf(err), "%s %v", tc.phase, tc.err)
		assert.ErrorIs(t, err, tc.want)
		assert.ErrorIs(t, err, tc.err, "the cause stays reachable")
	}
	assert.Nil(t, classify(PhaseCommand, "", nil))
	inner := classify(PhaseAuth, "", &replyError{Msg: "WRONGPASS x"})
	assert.Same(t, inner, classify(PhaseCommand, "", inner), "an *Error keeps its first classification")
	assert.Equal(t, "WRONGPASS", (&replyError{Msg: "WRONGPASS x y"}).code())
}

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet: Err is still nil, as it is for an instant after the deadline.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A timeout at ctx's deadline is the deadline's doing even before ctx
// reports it, so the DNS and TLS phases (whose socket or lookup deadline is
// ctx's) report context.DeadlineExceeded, not a bare i/o timeout.
func TestCtxCauseDeadlineReached(t *testing.T) {
	late := lateCtx{context.Background()}
	for _, err := range []error{os.ErrDeadlineExceeded, &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}},
		&net.DNSError{Err: "i/o timeout", IsTimeout: true}} {
		got := ctxCause(late, err)
		assert.ErrorIs(t, got, context.DeadlineExceeded, "%v", err)
		assert.Equal(t, ErrTimeout, kindOf(classify(PhaseDNS, "a:1", got)))
		assert.Equal(t, ErrTimeout, kindOf(classify(PhaseTLS, "a:1", got)))
		assert.Equal(t, ErrConnectTimeout, kindOf(classify(PhaseConnect, "a:1", got)))
	}
	// Other failures keep their cause, deadline or not.
	refused := os.NewSyscallError("connect", syscall.ECONNREFUSED)
	assert.Same(t, refused, ctxCause(late, refused))
	// Before the deadline a timeout is the endpoint's (ConnectTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.Equal(t, os.ErrDeadlineExceeded, ctxCause(ctx, os.ErrDeadlineExceeded))
	assert.Nil(t, ctxCause(late, nil))
}
