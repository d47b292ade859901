package throughput

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// busyError is what a client reads as ACCESS_DENIED, the one byte a stock
// iperf3 server sends a client while its test slot is taken, which iperf3
// prints as "the server is busy running a test. try again later" (issue
// 39). This package's server also sends it to a client outside
// AllowedClients or over MaxTestsPerClient. It matches ErrAccessDenied.
type busyError struct{}

func (busyError) Error() string {
	return "throughput: the server is busy running a test. try again later " +
		"(ACCESS_DENIED: a stock iperf3 server runs one test at a time; a server's allow-list or per-client limit sends it too)"
}

func (busyError) Is(target error) bool { return target == ErrAccessDenied }

var errBusy error = busyError{}

// Errors Run and the server return; test them with errors.Is.
var (
	// ErrAccessDenied: the server refused the test (busy, a limit, or a wrong cookie).
	ErrAccessDenied = errors.New("throughput: access denied by server")
	// ErrServerError: the server sent SERVER_ERROR; the error is a *ServerError with iperf3's codes.
	ErrServerError = errors.New("throughput: server error")
	// ErrServerTerminated: the server ended the test (SERVER_TERMINATE,
	// iperf3's "the server has terminated": it was stopped). It matches
	// ErrServerError too.
	ErrServerTerminated = fmt.Errorf("%w: server terminated the test", ErrServerError)
	// ErrProtocol: the peer sent something the protocol does not allow,
	// including a message above its size limit.
	ErrProtocol = iperfwire.ErrProtocol
	// ErrLimit: a test parameter exceeds a server limit.
	ErrLimit = errors.New("throughput: limit exceeded")
	// ErrTotalRate: a test's total rate, every stream in both directions,
	// is above the server's total limit (ServerConfig.MaxTotalBitrate here,
	// --server-bitrate-limit on iperf3): the rate the client asked for, or
	// a running test's average over the server's window. It is iperf3's
	// "total required bandwidth is larger than server limit" (i_errno 27).
	// Run returns a *ServerError that matches it; the server's own error
	// (OnFailure) matches ErrLimit too.
	ErrTotalRate = fmt.Errorf("%w: total required bandwidth is larger than server limit", ErrLimit)
	// ErrFlowLabel: Config.FlowLabel could not be set on a data stream: a
	// TCP stream to an IPv4 address, or a label the kernel refuses (one
	// leased to another destination, or above 0x7ffff when
	// net.ipv6.flowlabel_state_ranges is set), or a server's refusal of a
	// label outside 1..0xfffff. iperf3's "unable to set IPv6 flow
	// label".
	ErrFlowLabel = errors.New("throughput: unable to set IPv6 flow label")
	// ErrAffinity: a server could not run a test's streams on the CPU the
	// client asked for (Config.ServerAffinity): one outside its allowed
	// set (the error then matches syscall.EINVAL too) or outside 3.21's
	// 0..1024. iperf3's "unable to set CPU affinity".
	ErrAffinity = errors.New("throughput: unable to set CPU affinity")
	// ErrDataNeedsTCP: Config.SendFrom or ReceiveTo (ServerConfig's on a
	// server) with a UDP test, whose datagrams carry iperf3's header:
	// iperf3's "cannot transfer file using UDP".
	ErrDataNeedsTCP = errors.New("throughput: cannot transfer file using UDP")
	// ErrRecvIdle: this side's receiving streams took in nothing for
	// Config.RecvTimeout (ServerConfig.RecvTimeout on a server) while the
	// test ran: iperf3's "idle timeout for receiving data".
	ErrRecvIdle = errors.New("throughput: idle timeout for receiving data")
)

// ServerError is SERVER_ERROR with iperf3's i_errno and the system errno. It
// matches ErrServerError with errors.Is. Its message says what the code
// means: "throughput: server refused: block size invalid (i_errno 7)" for a
// request the server will not take (a parameter outside its limits, a busy
// server, failed credentials), "throughput: server error: ..." for a
// failure of its own, with the errno when there is one.
type ServerError struct {
	IErrno int // iperf3's error code (i_errno)
	Errno  int // the server's errno, 0 when none
}

func (e *ServerError) Error() string {
	meaning, ok := iperfwire.IErrnoMeaning(e.IErrno)
	if !ok {
		return fmt.Sprintf("throughput: server error: i_errno %d, errno %d", e.IErrno, e.Errno)
	}
	what := "server error"
	if iperfwire.IErrnoRefusal(e.IErrno) {
		what = "server refused"
	}
	if e.Errno != 0 {
		return fmt.Sprintf("throughput: %s: %s (i_errno %d, errno %d)", what, meaning, e.IErrno, e.Errno)
	}
	return fmt.Sprintf("throughput: %s: %s (i_errno %d)", what, meaning, e.IErrno)
}

// Is makes errors.Is(err, ErrServerError) true; for iperf3's "test
// authorization failed" (i_errno 142) ErrAuthFailed and ErrAccessDenied
// too, for "idle timeout for receiving data" (144) ErrRecvIdle, for
// "total required bandwidth is larger than server limit" (27) ErrTotalRate,
// for "unable to set CPU affinity" (132) ErrAffinity, for "unable to set
// IPv6 flow label" (127) ErrFlowLabel and for "cannot transfer file using
// UDP" (34) ErrDataNeedsTCP.
func (e *ServerError) Is(target error) bool {
	switch {
	case e.IErrno == iperfwire.IErrTotalRate && target == ErrTotalRate:
		return true
	case e.IErrno == iperfwire.IErrAuth && (target == ErrAuthFailed || target == ErrAccessDenied):
		return true
	case e.IErrno == iperfwire.IErrNoMsg && target == ErrRecvIdle:
		return true
	case e.IErrno == iperfwire.IErrAffinity && target == ErrAffinity:
		return true
	case e.IErrno == iperfwire.IErrSetFlow && target == ErrFlowLabel:
		return true
	case e.IErrno == iperfwire.IErrUDPFile && target == ErrDataNeedsTCP:
		return true
	}
	return target == ErrServerError
}

// readServerError reads the codes after SERVER_ERROR.
func readServerError(r io.Reader, timeout time.Duration) error {
	ie, en, err := iperfwire.ReadServerError(r, timeout)
	if err != nil {
		return fmt.Errorf("%w (codes unreadable: %w)", ErrServerError, err)
	}
	return &ServerError{IErrno: ie, Errno: en}
}

// setNoDelay sets TCP_NODELAY where the connection is TCP.
func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}

// errNotAvailable marks a measurement or fast path the platform does not
// offer (TCP_INFO, UDP GSO/GRO and MSS/congestion settings are
// linux-only); results carry it as a note, never as a test failure. It
// matches errors.ErrUnsupported.
var errNotAvailable error = notAvailable{}

// notAvailable is errNotAvailable's type: its message is the package's,
// and errors.Is finds errors.ErrUnsupported in it.
type notAvailable struct{}

func (notAvailable) Error() string { return "throughput: not available on this platform" }

func (notAvailable) Is(target error) bool { return target == errors.ErrUnsupported }
