package throughput

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// State is one byte of iperf3's control protocol (a signed char on the wire).
type State int8

// The control states iperf3 3.x exchanges. The server sends PARAM_EXCHANGE,
// CREATE_STREAMS, TEST_START, TEST_RUNNING, EXCHANGE_RESULTS, DISPLAY_RESULTS,
// SERVER_TERMINATE, ACCESS_DENIED and SERVER_ERROR; the client sends
// TEST_END, IPERF_DONE and CLIENT_TERMINATE.
const (
	StateTestStart       State = 1
	StateTestRunning     State = 2
	StateTestEnd         State = 4
	StateParamExchange   State = 9
	StateCreateStreams   State = 10
	StateServerTerminate State = 11
	StateClientTerminate State = 12
	StateExchangeResults State = 13
	StateDisplayResults  State = 14
	StateIperfDone       State = 16
	StateAccessDenied    State = -1
	StateServerError     State = -2
)

var stateNames = map[State]string{
	StateTestStart:       "TEST_START",
	StateTestRunning:     "TEST_RUNNING",
	StateTestEnd:         "TEST_END",
	StateParamExchange:   "PARAM_EXCHANGE",
	StateCreateStreams:   "CREATE_STREAMS",
	StateServerTerminate: "SERVER_TERMINATE",
	StateClientTerminate: "CLIENT_TERMINATE",
	StateExchangeResults: "EXCHANGE_RESULTS",
	StateDisplayResults:  "DISPLAY_RESULTS",
	StateIperfDone:       "IPERF_DONE",
	StateAccessDenied:    "ACCESS_DENIED",
	StateServerError:     "SERVER_ERROR",
}

// String returns iperf3's name for the state, or STATE(n) for unknown bytes.
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("STATE(%d)", int8(s))
}

// Known reports whether s is one of the states iperf3 sends.
func (s State) Known() bool {
	_, ok := stateNames[s]
	return ok
}

// CookieLen is the length of iperf3's cookie on the wire: 36 characters and a
// terminating NUL.
const CookieLen = 37

const cookieChars = "abcdefghijklmnopqrstuvwxyz234567"

// Protocol limits and defaults, taken from iperf3.
const (
	// DefaultPort is iperf3's default port.
	DefaultPort = 5201
	// DefaultTCPBlockLen is iperf3's default TCP read/write length (128 KiB).
	DefaultTCPBlockLen = 128 * 1024
	// DefaultBlockLen is this package's default TCP write length (1 MiB).
	DefaultBlockLen = 1 << 20
	// DefaultReadLen is the TCP receive read size. On loopback, 16 KiB
	// reads returned window space to the sender often enough to receive
	// 1.3x what iperf3's 128 KiB reads do, and 1 MiB reads 0.8x
	// (docs/benchmarks.md); set Config.ReadLen / ServerConfig.ReadLen higher
	// to trade that for fewer system calls.
	DefaultReadLen = 16 << 10
	// DefaultUDPBitrate is iperf3's default UDP target rate (1 Mbit/s as 1024*1024).
	DefaultUDPBitrate = 1024 * 1024
	// DefaultMaxParamsBytes is iperf3's limit on the parameters JSON.
	DefaultMaxParamsBytes = 8 * 1024
	// DefaultMaxResultsBytes is this package's limit on a results JSON
	// (iperf3 has none; server_output_json of a long test can be large).
	DefaultMaxResultsBytes = 4 << 20
	// MaxStreams is iperf3's limit on parallel streams.
	MaxStreams         = 128
	minUDPLen          = 16
	maxUDPLen          = 65507
	udpConnectMsg      = 0x36373839 // what 3.12+ writes in host order: bytes "9876" on little-endian
	udpConnectReply    = 0x39383736
	legacyConnectMsg   = 123456789
	legacyConnectReply = 987654321
)

// Errors the control protocol returns; callers test them with errors.Is.
var (
	// ErrAccessDenied: the server refused the test (busy, a limit, or a wrong cookie).
	ErrAccessDenied = errors.New("throughput: access denied by server")
	// ErrServerError: the server sent SERVER_ERROR; the wrapping error carries iperf3's codes.
	ErrServerError = errors.New("throughput: server error")
	// ErrProtocol: the peer sent something the protocol does not allow.
	ErrProtocol = errors.New("throughput: protocol violation")
	// ErrTooLarge: a JSON message exceeded the configured limit.
	ErrTooLarge = errors.New("throughput: message too large")
	// ErrLimit: a test parameter exceeds a server limit.
	ErrLimit = errors.New("throughput: limit exceeded")
)

// newCookie returns a fresh 37-byte cookie as iperf3 makes it.
func newCookie() ([]byte, error) {
	var raw [CookieLen - 1]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("throughput: cookie: %w", err)
	}
	c := make([]byte, CookieLen)
	for i, b := range raw {
		c[i] = cookieChars[int(b)%len(cookieChars)]
	}
	return c, nil
}

// cookieString returns the printable part of a cookie.
func cookieString(c []byte) string {
	for i, b := range c {
		if b == 0 {
			return string(c[:i])
		}
	}
	return string(c)
}

// deadliner is the part of net.Conn the codec needs to bound each operation.
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

func setRead(r io.Reader, timeout time.Duration) {
	if d, ok := r.(deadliner); ok && timeout > 0 {
		_ = d.SetReadDeadline(time.Now().Add(timeout))
	}
}

func setWrite(w io.Writer, timeout time.Duration) {
	if d, ok := w.(deadliner); ok && timeout > 0 {
		_ = d.SetWriteDeadline(time.Now().Add(timeout))
	}
}

// readState reads one state byte.
func readState(r io.Reader, timeout time.Duration) (State, error) {
	setRead(r, timeout)
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("throughput: read state: %w", err)
	}
	return State(int8(b[0])), nil
}

// writeState writes one state byte.
func writeState(w io.Writer, s State, timeout time.Duration) error {
	setWrite(w, timeout)
	if _, err := w.Write([]byte{stateByte(s)}); err != nil {
		return fmt.Errorf("throughput: write state %v: %w", s, err)
	}
	return nil
}

// readServerError reads the two big-endian int32 codes after SERVER_ERROR.
func readServerError(r io.Reader, timeout time.Duration) error {
	setRead(r, timeout)
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("%w (codes unreadable: %v)", ErrServerError, err)
	}
	ie := int32(binary.BigEndian.Uint32(b[:4]))
	en := int32(binary.BigEndian.Uint32(b[4:]))
	return &ServerError{IErrno: int(ie), Errno: int(en)}
}

// ServerError is SERVER_ERROR with iperf3's i_errno and the system errno. It
// matches ErrServerError with errors.Is.
type ServerError struct {
	IErrno int // iperf3's error code (i_errno)
	Errno  int // the server's errno, 0 when none
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("throughput: server error: i_errno %d, errno %d", e.IErrno, e.Errno)
}

// Is makes errors.Is(err, ErrServerError) true.
func (e *ServerError) Is(target error) bool { return target == ErrServerError }

func writeServerError(w io.Writer, ierrno, errno int, timeout time.Duration) error {
	var b [9]byte
	b[0] = stateByte(StateServerError)
	binary.BigEndian.PutUint32(b[1:5], uint32(int32(ierrno)))
	binary.BigEndian.PutUint32(b[5:], uint32(int32(errno)))
	setWrite(w, timeout)
	_, err := w.Write(b[:])
	return err
}

// readJSON reads a uint32 big-endian length and that many bytes of JSON. A
// zero length or one above max is an error (ErrProtocol / ErrTooLarge).
func readJSON(r io.Reader, max int, timeout time.Duration) ([]byte, error) {
	setRead(r, timeout)
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("throughput: read json length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, fmt.Errorf("%w: zero json length", ErrProtocol)
	}
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: json of %d bytes, limit %d", ErrTooLarge, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("throughput: read json body: %w", err)
	}
	return buf, nil
}

// writeJSON writes the length-prefixed JSON message in one write.
func writeJSON(w io.Writer, js []byte, timeout time.Duration) error {
	if len(js) == 0 || uint64(len(js)) > 1<<31 {
		return fmt.Errorf("%w: json length %d", ErrProtocol, len(js))
	}
	b := make([]byte, 4+len(js))
	binary.BigEndian.PutUint32(b, uint32(len(js)))
	copy(b[4:], js)
	setWrite(w, timeout)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("throughput: write json: %w", err)
	}
	return nil
}

// setNoDelay sets TCP_NODELAY where the connection is TCP.
func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}

// stateByte is the wire form of a state (two's complement for the negative ones).
func stateByte(s State) byte { return byte(int8(s)) }
