package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// 3.21's words for the errors this file maps (src/iperf_error.c).
const (
	msgConnect        = "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc."
	msgServerTerm     = "the server has terminated"
	msgTotalRate      = "total required bandwidth is larger than server limit"
	msgCongestion     = "unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host"
	msgNoName         = "Name or service not known"                 // getaddrinfo's EAI_NONAME
	msgNameAgain      = "Temporary failure in name resolution"      // EAI_AGAIN
	msgAddrFamily     = "Address family for hostname not supported" // EAI_ADDRFAMILY
	throughputErrText = "throughput: "
	msgFlowLabel      = "unable to set IPv6 flow label"
	msgAffinity       = "unable to set CPU affinity"
)

// serverErrors is 3.21's iperf_strerror text for the SERVER_ERROR codes a
// server sends (src/iperf_error.c); withErrno marks the texts 3.21 follows
// with ": " and the server's errno.
var serverErrors = map[int]struct {
	text      string
	withErrno bool
}{
	5:   {"test duration valid values are 0 to 86400 seconds", false},
	6:   {"invalid number of parallel streams (min = 1, max = 128)", false},
	7:   {"block size too large (maximum = 1048576 bytes)", false},
	8:   {"socket buffer size too large (maximum = 536870912 bytes)", false},
	10:  {"TCP MSS too large (maximum = 32767 bytes)", false},
	12:  {"bogus value for --omit (maximum = 600 seconds)", false},
	14:  {"unable to open -F file", true},
	21:  {"bad TOS value (must be between 0 and 255 inclusive)", false},
	27:  {msgTotalRate, false},
	34:  {"cannot transfer file using UDP", false},
	102: {"unable to start listener for connections", true},
	114: {"unable to receive parameters from client", true},
	127: {msgFlowLabel, false},
	132: {msgAffinity, true},
	142: {"test authorization failed", false},
	144: {"idle timeout for receiving data", false},
	204: {"unable to accept stream connection", true},
}

// serverErrorText is 3.21's text for a server's SERVER_ERROR, with the
// server's errno where 3.21 adds it; "" for a code it does not know.
func serverErrorText(se *throughput.ServerError) string {
	e, ok := serverErrors[se.IErrno]
	switch {
	case !ok:
		return ""
	case !e.withErrno:
		return e.text
	case se.Errno == 0:
		return e.text + ": " // as 3.21 writes it
	}
	return e.text + ": " + strerror(syscall.Errno(se.Errno))
}

// connectError is a failure to resolve the server's name before dialling,
// worded as 3.21's IECONNECT with getaddrinfo's text.
type connectError struct{ cause string }

func (e *connectError) Error() string { return msgConnect + ": " + e.cause }

// iperfMessage words the errors scripts grep for as 3.21 words them.
func iperfMessage(err error) string {
	var (
		op    *net.OpError
		errno syscall.Errno
		ce    *connectError
		se    *throughput.ServerError
		fe    *fileError
	)
	switch {
	case errors.As(err, &ce):
		return ce.Error()
	case errors.As(err, &fe):
		return fe.Error()
	case errors.Is(err, throughput.ErrAccessDenied):
		return accessDenied(err)
	case errors.Is(err, throughput.ErrRecvIdle):
		return "idle timeout for receiving data"
	case errors.Is(err, throughput.ErrServerTerminated):
		return msgServerTerm
	case errors.As(err, &se) && serverErrorText(se) != "":
		return serverErrorText(se)
	case errors.Is(err, throughput.ErrTotalRate):
		return msgTotalRate
	case errors.Is(err, throughput.ErrFlowLabel):
		return msgFlowLabel // a TCP stream to an IPv4 address
	case errors.Is(err, io.EOF):
		return "control socket has closed unexpectedly"
	case errors.As(err, &op) && op.Op == "dial":
		var dns *net.DNSError
		if errors.As(op.Err, &dns) {
			return msgConnect + ": " + dnsCause(dns)
		}
		cause := op.Err.Error()
		if errors.As(op.Err, &errno) {
			cause = strerror(errno)
		}
		return msgConnect + ": " + capitalize(cause)
	case errors.As(err, &se):
		// 3.21 prints its own text for each i_errno; without the table,
		// the codes, without the Go package's prefix.
		return fmt.Sprintf("server error: i_errno %d, errno %d", se.IErrno, se.Errno)
	}
	return strings.TrimPrefix(err.Error(), throughputErrText)
}

// dnsCause is getaddrinfo's gai_strerror text for a failed lookup.
func dnsCause(e *net.DNSError) string {
	if e.IsTimeout || e.IsTemporary {
		return msgNameAgain
	}
	return msgNoName
}

// strerror is C's strerror(errno): Go's text with a capital letter.
func strerror(errno syscall.Errno) string { return capitalize(errno.Error()) }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// errnoText is strerror of the errno inside err, or err's own text.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return strerror(errno)
	}
	return strings.TrimPrefix(err.Error(), throughputErrText)
}

// accessDenied words a refusal as 3.21's client words it: a server that
// sends "test authorization failed" (ours), one that closes the connection
// after reading the credentials (3.21's own), or a busy one.
func accessDenied(err error) string {
	var se *throughput.ServerError
	switch {
	case errors.As(err, &se) && errors.Is(err, throughput.ErrAuthFailed):
		return "test authorization failed"
	case errors.Is(err, throughput.ErrAuthFailed):
		return "control socket has closed unexpectedly"
	}
	return "the server is busy running a test. try again later"
}

// clientMessage is iperfMessage with what only the options tell: a
// congestion algorithm the kernel refuses reaches the library as ENOENT
// from setsockopt(TCP_CONGESTION).
func clientMessage(o *options, err error) string {
	if o.cfg.Congestion != "" && errors.Is(err, syscall.ENOENT) {
		return msgCongestion
	}
	return iperfMessage(err)
}

// fail reports an error as 3.21 does in each output mode and returns 1.
func fail(o *options, out, errOut io.Writer, err error) int {
	msg := clientMessage(o, err)
	var se *throughput.ServerError
	if errors.As(err, &se) {
		// 3.21 prints the server's error, with its errno, then its own.
		line := "SERVER ERROR - " + msg
		if se.Errno > 0 {
			line += ", errno: " + strerror(syscall.Errno(se.Errno))
		}
		if o.jsonStream {
			iperf3fmt.NewJSONStream(out, 0, nil).Error(line)
		} else if !o.json {
			fmt.Fprintf(errOut, "iperf3: %s\n", line)
		}
	}
	switch {
	case o.jsonStream:
		iperf3fmt.NewJSONStream(out, 0, nil).Error("error - " + msg)
	case o.json:
		printErrorJSON(out, o, msg)
	default:
		fmt.Fprintf(errOut, "iperf3: error - %s\n", msg)
	}
	return 1
}

// printErrorJSON is 3.21's -J document for a run that failed before its
// test: "start" holds what is known before connecting.
func printErrorJSON(out io.Writer, o *options, msg string) {
	b, _ := json.MarshalIndent(struct {
		Start     any      `json:"start"`
		Intervals []any    `json:"intervals"`
		End       struct{} `json:"end"`
		Error     string   `json:"error"`
	}{startSkeleton(o), []any{}, struct{}{}, msg}, "", "\t")
	fmt.Fprintf(out, "%s\n", b)
}

// startSkeleton is 3.21's "start" before a connection: no streams, the
// version and the system, as the library writes them in a full document.
func startSkeleton(o *options) any {
	s := struct {
		Connected  []any  `json:"connected"`
		Version    string `json:"version"`
		SystemInfo string `json:"system_info"`
	}{Connected: []any{}}
	role := "client"
	if o.server {
		role = "server"
	}
	if doc, err := iperf3fmt.JSON(&throughput.Result{Role: role, Config: o.cfg}); err == nil {
		var m struct {
			Start json.RawMessage `json:"start"`
		}
		if json.Unmarshal(doc, &m) == nil {
			_ = json.Unmarshal(m.Start, &s)
		}
		if s.Connected == nil {
			s.Connected = []any{}
		}
	}
	return s
}
