package iperfwire

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors the decoders return; package throughput re-exports ErrProtocol.
var (
	// ErrProtocol: the peer sent something the protocol does not allow.
	ErrProtocol = errors.New("throughput: protocol violation")
	// ErrTooLarge: a JSON message exceeded the reader's limit. It matches ErrProtocol.
	ErrTooLarge = fmt.Errorf("%w: message too large", ErrProtocol)
)

// State is one byte of iperf3's control protocol (a signed char on the wire).
type State int8

// The control states iperf3 3.x exchanges. The server sends PARAM_EXCHANGE,
// CREATE_STREAMS, TEST_START, TEST_RUNNING, EXCHANGE_RESULTS, DISPLAY_RESULTS,
// SERVER_TERMINATE, ACCESS_DENIED and SERVER_ERROR; the client sends
// TEST_END, IPERF_DONE and CLIENT_TERMINATE.
const (
	TestStart       State = 1
	TestRunning     State = 2
	TestEnd         State = 4
	ParamExchange   State = 9
	CreateStreams   State = 10
	ServerTerminate State = 11
	ClientTerminate State = 12
	ExchangeResults State = 13
	DisplayResults  State = 14
	IperfDone       State = 16
	AccessDenied    State = -1
	ServerError     State = -2
)

var stateNames = map[State]string{
	TestStart:       "TEST_START",
	TestRunning:     "TEST_RUNNING",
	TestEnd:         "TEST_END",
	ParamExchange:   "PARAM_EXCHANGE",
	CreateStreams:   "CREATE_STREAMS",
	ServerTerminate: "SERVER_TERMINATE",
	ClientTerminate: "CLIENT_TERMINATE",
	ExchangeResults: "EXCHANGE_RESULTS",
	DisplayResults:  "DISPLAY_RESULTS",
	IperfDone:       "IPERF_DONE",
	AccessDenied:    "ACCESS_DENIED",
	ServerError:     "SERVER_ERROR",
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

// i_errno values sent with SERVER_ERROR, iperf3 3.x's numbers (iperf_api.h),
// so a stock client prints a matching message.
const (
	IErrDuration   = 5   // IEDURATION
	IErrTotalRate  = 27  // IETOTALRATE: a bitrate above the server's cap
	IErrUDPFile    = 34  // IEUDPFILETRANSFER: "cannot transfer file using UDP"
	IErrNumStreams = 6   // IENUMSTREAMS
	IErrBlockSize  = 7   // IEBLOCKSIZE
	IErrBufSize    = 8   // IEBUFSIZE
	IErrMSS        = 10  // IEMSS
	IErrOmit       = 12  // IEOMIT
	IErrFile       = 14  // IEFILE: "unable to open -F file"
	IErrBadTOS     = 21  // IEBADTOS
	IErrListen     = 102 // IELISTEN: the UDP socket could not be bound
	IErrRecvParams = 114 // IERECVPARAMS: parameters unreadable or too large
	IErrSetFlow    = 127 // IESETFLOW: "unable to set IPv6 flow label"
	IErrAffinity   = 132 // IEAFFINITY: "unable to set CPU affinity" (with errno)
	IErrAuth       = 142 // IEAUTHTEST: "test authorization failed"
	IErrNoMsg      = 144 // IENOMSG: "idle timeout for receiving data"
	IErrStreams    = 204 // IESTREAMACCEPT: streams did not arrive in time
)

// CookieLen is the length of iperf3's cookie on the wire: 36 characters and a
// terminating NUL.
const CookieLen = 37

// CookieChars are the characters iperf3 draws a cookie from.
const CookieChars = "abcdefghijklmnopqrstuvwxyz234567"

// NewCookie returns a fresh 37-byte cookie as iperf3 makes it.
func NewCookie() ([]byte, error) {
	var raw [CookieLen - 1]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("throughput: cookie: %w", err)
	}
	c := make([]byte, CookieLen)
	for i, b := range raw {
		c[i] = CookieChars[int(b)%len(CookieChars)]
	}
	return c, nil
}

// CookieString returns the printable part of a cookie.
func CookieString(c []byte) string {
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

// SetRead bounds the next reads on r by timeout when r has deadlines.
func SetRead(r io.Reader, timeout time.Duration) {
	if d, ok := r.(deadliner); ok && timeout > 0 {
		_ = d.SetReadDeadline(time.Now().Add(timeout))
	}
}

// SetWrite bounds the next writes on w by timeout when w has deadlines.
func SetWrite(w io.Writer, timeout time.Duration) {
	if d, ok := w.(deadliner); ok && timeout > 0 {
		_ = d.SetWriteDeadline(time.Now().Add(timeout))
	}
}

// ReadState reads one state byte within timeout (0: no deadline).
func ReadState(r io.Reader, timeout time.Duration) (State, error) {
	SetRead(r, timeout)
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("throughput: read state: %w", err)
	}
	return State(int8(b[0])), nil
}

// WriteState writes one state byte within timeout (0: no deadline).
func WriteState(w io.Writer, s State, timeout time.Duration) error {
	SetWrite(w, timeout)
	if _, err := w.Write([]byte{stateByte(s)}); err != nil {
		return fmt.Errorf("throughput: write state %v: %w", s, err)
	}
	return nil
}

// ReadServerError reads the two big-endian int32 codes after SERVER_ERROR:
// iperf3's i_errno and the server's errno.
func ReadServerError(r io.Reader, timeout time.Duration) (ierrno, errno int, err error) {
	SetRead(r, timeout)
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, 0, fmt.Errorf("throughput: read server error codes: %w", err)
	}
	return int(int32(binary.BigEndian.Uint32(b[:4]))), int(int32(binary.BigEndian.Uint32(b[4:]))), nil
}

// WriteServerError writes SERVER_ERROR and its two codes in one write.
func WriteServerError(w io.Writer, ierrno, errno int, timeout time.Duration) error {
	var b [9]byte
	b[0] = stateByte(ServerError)
	binary.BigEndian.PutUint32(b[1:5], uint32(int32(ierrno)))
	binary.BigEndian.PutUint32(b[5:], uint32(int32(errno)))
	SetWrite(w, timeout)
	if _, err := w.Write(b[:]); err != nil {
		return fmt.Errorf("throughput: write server error: %w", err)
	}
	return nil
}

// ReadJSON reads a uint32 big-endian length and that many bytes of JSON. A
// zero length is ErrProtocol, one above max ErrTooLarge.
func ReadJSON(r io.Reader, max int, timeout time.Duration) ([]byte, error) {
	SetRead(r, timeout)
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

// WriteJSON writes the length-prefixed JSON message in one write.
func WriteJSON(w io.Writer, js []byte, timeout time.Duration) error {
	if len(js) == 0 || uint64(len(js)) > 1<<31 {
		return fmt.Errorf("%w: json length %d", ErrProtocol, len(js))
	}
	b := make([]byte, 4+len(js))
	binary.BigEndian.PutUint32(b, uint32(len(js)))
	copy(b[4:], js)
	SetWrite(w, timeout)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("throughput: write json: %w", err)
	}
	return nil
}

// stateByte is the wire form of a state (two's complement for the negative ones).
func stateByte(s State) byte { return byte(int8(s)) }
