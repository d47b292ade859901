package latency

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// Receive selects how the ping-pong client waits for replies.
type Receive int

const (
	// ReceiveDefault, on linux, reads on a thread of its own that sleeps
	// in the kernel (poll(2) and recv outside Go's netpoller), as sockperf
	// does: it costs an OS thread per run but no CPU while it waits, and the
	// kernel wakes it directly, where a netpoller wake-up added tens of
	// microseconds to each round trip on an idle machine. Elsewhere it waits
	// through the netpoller.
	ReceiveDefault Receive = iota
	// ReceiveSpin receives on the raw socket from a goroutine locked to its
	// OS thread, spinning on non-blocking receives for up to SpinTimeout per
	// reply before blocking in poll(2). It comes close to sockperf's own
	// round-trip times but BURNS A WHOLE CORE while it runs: on a 2-core
	// machine it can starve the process under test. Linux only; elsewhere
	// PingPong returns an error wrapping ErrSpinUnsupported.
	ReceiveSpin
)

// String returns "default" or "spin", the names PingPongResult reports.
func (m Receive) String() string {
	switch m {
	case ReceiveDefault:
		return "default"
	case ReceiveSpin:
		return "spin"
	}
	return fmt.Sprintf("Receive(%d)", int(m))
}

// errNilContext is the error of a blocking call given a nil context.
var errNilContext = errors.New("latency: nil context.Context")

// ErrSpinUnsupported is wrapped by the error of PingPong in ReceiveSpin on
// platforms without the low-latency receive path.
var ErrSpinUnsupported = errors.New("latency: spin mode (low-latency receive) is not available on this platform")

// Defaults of PingPongConfig.
const (
	defaultDuration    = time.Second
	defaultMessageSize = wire.HeaderSize
	defaultReplyEvery  = 100
	defaultReadTimeout = time.Second
	defaultWarmUp      = 400 * time.Millisecond
	defaultCoolDown    = 50 * time.Millisecond
	defaultSpinTimeout = time.Millisecond
)

// PingPongConfig describes a ping-pong or under-load run. A nil
// *PingPongConfig means all defaults: a one-second UDP ping-pong with 14-byte
// messages in ReceiveDefault.
type PingPongConfig struct {
	// Network is "udp" (the zero value) or "tcp" (or their "4"/"6" forms).
	Network string
	// Duration is the length of the run. Zero means 1 s unless Count is
	// set.
	Duration time.Duration
	// Count, when positive, ends the run after Count messages (Duration, if
	// also set, still bounds it). A counted run keeps every sample: there
	// is no warm-up or cool-down window.
	Count int64
	// MessageSize is the size of each message, header included: at least
	// the 14-byte header; over UDP at most 65507 bytes, over TCP at most
	// 16 MiB. Zero means 14. A Server, like `sockperf server`, accepts
	// 65507 bytes unless its MaxMessageSize (sockperf's -m) says more.
	MessageSize int
	// Receive selects the receive path; see ReceiveSpin before using it.
	Receive Receive
	// SpinTimeout bounds the spinning in ReceiveSpin for each reply, after
	// which the client blocks in poll(2). Zero means 1 ms.
	SpinTimeout time.Duration
	// MPS, when positive, makes this an under-load run like `sockperf
	// under-load`: messages are sent at a fixed rate of MPS per second and
	// only every ReplyEvery-th one asks for a reply. Zero means ping-pong.
	// In ReceiveDefault on linux one thread sends and, while it waits for
	// the next send time (or, over TCP, for room in the send buffer),
	// reads the replies, as sockperf does; otherwise a second thread reads
	// them.
	// Like sockperf, the sender busy-waits for gaps under 2 ms when
	// GOMAXPROCS is above 1, so an under-load run above ~500 messages per
	// second keeps a core busy; with GOMAXPROCS 1 it sleeps, and messages
	// go out up to ~1 ms late (counted in Late).
	MPS int
	// Arrival spaces the under-load send times: ArrivalUniform (the zero
	// value, like sockperf) or ArrivalPoisson.
	Arrival Arrival
	// ReplyEvery is the under-load reply ratio. Zero means 100.
	ReplyEvery int
	// ReadTimeout is how long a reply is awaited before the message counts
	// as dropped, so a silent server ends the run with drops rather than a
	// hang; it also bounds every write. With AdaptiveTimeout it is the
	// longest wait. Zero means 1 s.
	ReadTimeout time.Duration
	// AdaptiveTimeout makes a ping-pong run wait for each reply only as long
	// as the round trips so far suggest, as TCP's retransmission timer does
	// (RFC 6298): srtt + 4·rttvar, at least MinReadTimeout, doubled after
	// each timeout until the next reply, at most ReadTimeout, and
	// ReadTimeout until the first reply. A lost reply then costs a few
	// round trips rather than ReadTimeout. A reply that comes after its
	// timeout but within ReadTimeout of its message is late, not lost: its
	// round trip is recorded (in Samples at its message's place), it
	// counts in LateReplies and not in Dropped, and it feeds the estimate.
	// After the last message the run waits one more timeout for such
	// replies, not counted in RunTime, and no longer than ReadTimeout
	// after the newest message still unanswered. A run that ctx ends does
	// not wait: a message whose ReadTimeout had not passed then is neither
	// dropped nor recorded. Replies are matched to messages by sequence
	// number, so a late reply is never taken for a later message's.
	// Under-load runs (MPS > 0) refuse it.
	AdaptiveTimeout bool
	// MinReadTimeout is the floor of the adaptive timeout: below it, the
	// next message would often go out while the reply to the last one is
	// merely held up by scheduling on either host. Zero means 10 ms, or
	// ReadTimeout if that is shorter.
	MinReadTimeout time.Duration
	// WarmUp excludes the messages sent in this first part of a timed run
	// from the statistics, and CoolDown those sent in its last part, as
	// sockperf does. Zero means 400 ms of warm-up and 50 ms of cool-down;
	// a negative value means none. A timed run must be longer than
	// both together.
	WarmUp, CoolDown time.Duration
	// KernelStamps, on linux, takes the kernel-to-kernel view of each
	// ping-pong round trip (PingPongResult.KernelRTT): the request's
	// software transmit stamp, read from the socket's error queue, and the
	// reply's receive stamp. It costs each round trip about a microsecond
	// of the application's view (one more system call, and the kernel's
	// work to queue the stamp: 8.1 -> 9.0 us UDP, 9.0 -> 10.1 us TCP
	// p50 on loopback), so it is off unless asked for. Under-load runs
	// ignore it.
	KernelStamps bool
	// DiscardSamples drops the raw samples: the Summary then comes from
	// the histogram. By default every round trip is kept, like sockperf's
	// --full-rtt, and the Summary is exact.
	DiscardSamples bool
	// Summary tunes the statistics (nil means defaults).
	Summary *SummaryConfig
	// Recorder sets the histogram range and precision (nil means defaults).
	Recorder *RecorderConfig
}

// PingPongResult is the outcome of PingPong. The embedded Summary describes
// the round-trip times (what sockperf prints with --full-rtt; sockperf's
// default "latency" is half of it) of the messages in the measurement window;
// in an under-load run they are measured from each message's INTENDED send
// time, which keeps a stalled server from hiding its stall (coordinated
// omission), less the sender's own lateness (SendLateness), and Raw holds
// the plain send-to-reply statistics.
type PingPongResult struct {
	Summary
	// Network and Receive ("default" or "spin") describe the run.
	Network string `json:"network"`
	Receive string `json:"mode"`
	// MessageSizeBytes is the size of each message, header included.
	MessageSizeBytes int `json:"message_size_bytes"`
	// Sent and Received count every message sent and every reply received
	// during the whole run (not only the measurement window), without the
	// warm-up messages sockperf's protocol sends first (over UDP: eight, or
	// as many as fit in 64 KiB, at least one).
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	// RunTime is the length of the whole run: in ping-pong up to the
	// last reply or timeout (AdaptiveTimeout's final wait for late replies
	// is not part of it), in under-load up to the last send. ValidTime
	// is that of the measurement window. JSON has them in seconds
	// ("run_seconds", "valid_seconds").
	RunTime   time.Duration `json:"-"`
	ValidTime time.Duration `json:"-"`
	// TargetMPS is the configured rate of an under-load run (0 in
	// ping-pong), and AchievedMPS the rate actually sent.
	TargetMPS   int     `json:"target_mps,omitempty"`
	AchievedMPS float64 `json:"achieved_mps"`
	// ReplyEvery is the under-load reply ratio (0 in ping-pong).
	ReplyEvery int `json:"reply_every,omitempty"`
	// Late counts the under-load messages sent more than one interval (at
	// most 1 ms) after their intended time; they are sent, not skipped, and
	// their round trips are measured from the intended time.
	Late int64 `json:"late,omitempty"`
	// LateReplies counts the measured messages of an AdaptiveTimeout run
	// whose reply came after their timeout and was still recorded (see
	// PingPongConfig.AdaptiveTimeout); they are not in Dropped.
	LateReplies int64 `json:"late_replies,omitempty"`
	// Raw summarises the send-to-reply times of an under-load run.
	Raw *Summary `json:"raw,omitempty"`
	// SendLateness and ReceiveWake are the client's own share of the
	// measured messages (docs/conventions.md); nil when not measured.
	// SendLateness, under load, is how late each message went out past its
	// intended time (over TCP, past the previous write's return if later):
	// the sender never waits for a reply, so that is its own timer's and
	// thread's doing, and it is kept out of the round trips above (a TCP
	// write held up by flow control stays in them). ReceiveWake runs from
	// each reply's arrival in the kernel (SO_TIMESTAMPNS, linux) to its
	// read's return, and is inside the round trips.
	SendLateness *Summary `json:"send_lateness,omitempty"`
	ReceiveWake  *Summary `json:"receive_wake,omitempty"`
	// KernelRTT is the kernel-to-kernel view of the round trips above: from
	// each message's software transmit stamp to its reply's receive stamp
	// (SO_TIMESTAMPING and SO_TIMESTAMPNS, both taken by the client's
	// kernel), so it holds what the path and the server did and none of
	// the client's own scheduling: where a number measures a path, it
	// leads. Ping-pong runs on linux with PingPongConfig.KernelStamps
	// only; nil otherwise, and NoKernelStamps then says why (never a zero
	// in its place). KernelStampsLost counts the measured messages whose
	// view is missing because a stamp was: the kernel's error queue was
	// full, the device did not stamp the send, or (TCP, on a loaded
	// machine) the reply's segment came without a receive stamp.
	KernelRTT        *Summary `json:"kernel_rtt,omitempty"`
	KernelStampsLost int64    `json:"kernel_stamps_lost,omitempty"`
	NoKernelStamps   string   `json:"no_kernel_stamps,omitempty"`
	// KernelSamples holds each measured message's kernel view at the
	// index of its round trip in Samples (-1 where a stamp is missing);
	// nil with DiscardSamples or without stamps.
	KernelSamples []time.Duration `json:"-"`
	// SocketDrops is the kernel's drop counter of the client's socket at
	// the run's end (SO_MEMINFO's SK_MEMINFO_DROPS, linux): replies the
	// kernel dropped on their way into it, mostly for a full receive
	// buffer, which Dropped otherwise counts as lost on the path. Nil
	// when it could not be read, and NoSocketDrops then says why (never a
	// zero in its place).
	SocketDrops   *int64 `json:"socket_drops,omitempty"`
	NoSocketDrops string `json:"no_socket_drops,omitempty"`
	// Samples holds every measured round trip in send order, unless
	// DiscardSamples was set; RawSamples the under-load send-to-reply times.
	Samples    []time.Duration `json:"-"`
	RawSamples []time.Duration `json:"-"`
	// Recorder holds the measured round trips as a histogram.
	Recorder *Recorder `json:"-"`
}

// pingPongJSON is PingPongResult's wire form: the Summary's fields first,
// durations in float microseconds and the run's lengths in seconds.
type pingPongJSON struct {
	summaryJSON
	Network          string   `json:"network"`
	Receive          string   `json:"mode"`
	MessageSizeBytes int      `json:"message_size_bytes"`
	Sent             int64    `json:"sent"`
	Received         int64    `json:"received"`
	RunSeconds       float64  `json:"run_seconds"`
	ValidSeconds     float64  `json:"valid_seconds"`
	TargetMPS        int      `json:"target_mps,omitempty"`
	AchievedMPS      float64  `json:"achieved_mps"`
	ReplyEvery       int      `json:"reply_every,omitempty"`
	Late             int64    `json:"late,omitempty"`
	LateReplies      int64    `json:"late_replies,omitempty"`
	Raw              *Summary `json:"raw,omitempty"`
	SendLateness     *Summary `json:"send_lateness,omitempty"`
	ReceiveWake      *Summary `json:"receive_wake,omitempty"`
	KernelRTT        *Summary `json:"kernel_rtt,omitempty"`
	KernelStampsLost int64    `json:"kernel_stamps_lost,omitempty"`
	NoKernelStamps   string   `json:"no_kernel_stamps,omitempty"`
	SocketDrops      *int64   `json:"socket_drops,omitempty"`
	NoSocketDrops    string   `json:"no_socket_drops,omitempty"`
}

// MarshalJSON writes the result in the form netperfkit has always written:
// the Summary's fields at the top level in microseconds, "run_seconds" and
// "valid_seconds" in seconds. Samples and Recorder are not written.
func (r PingPongResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(pingPongJSON{
		summaryJSON: r.Summary.wire(), Network: r.Network, Receive: r.Receive,
		MessageSizeBytes: r.MessageSizeBytes, Sent: r.Sent, Received: r.Received,
		RunSeconds: r.RunTime.Seconds(), ValidSeconds: r.ValidTime.Seconds(),
		TargetMPS: r.TargetMPS, AchievedMPS: r.AchievedMPS, ReplyEvery: r.ReplyEvery,
		Late: r.Late, LateReplies: r.LateReplies, Raw: r.Raw, SendLateness: r.SendLateness, ReceiveWake: r.ReceiveWake,
		KernelRTT: r.KernelRTT, KernelStampsLost: r.KernelStampsLost, NoKernelStamps: r.NoKernelStamps,
		SocketDrops: r.SocketDrops, NoSocketDrops: r.NoSocketDrops,
	})
}

// UnmarshalJSON reads what MarshalJSON writes, rounding durations to the
// nanosecond.
func (r *PingPongResult) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("latency: ping-pong result: UnmarshalJSON into a nil pointer")
	}
	var w pingPongJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("latency: ping-pong result: %w", err)
	}
	*r = PingPongResult{
		Summary: w.summary(), Network: w.Network, Receive: w.Receive,
		MessageSizeBytes: w.MessageSizeBytes, Sent: w.Sent, Received: w.Received,
		RunTime: seconds(w.RunSeconds), ValidTime: seconds(w.ValidSeconds),
		TargetMPS: w.TargetMPS, AchievedMPS: w.AchievedMPS, ReplyEvery: w.ReplyEvery,
		Late: w.Late, LateReplies: w.LateReplies, Raw: w.Raw, SendLateness: w.SendLateness, ReceiveWake: w.ReceiveWake,
		KernelRTT: w.KernelRTT, KernelStampsLost: w.KernelStampsLost, NoKernelStamps: w.NoKernelStamps,
		SocketDrops: w.SocketDrops, NoSocketDrops: w.NoSocketDrops,
	}
	return nil
}

// seconds converts float seconds to the nearest nanosecond.
func seconds(s float64) time.Duration { return usec.FromNanoseconds(s * float64(time.Second)) }

// field is a configuration field's name and the value the caller set:
// an int, or a time.Duration, which an error prints as one ("-1s").
type field struct {
	name  string
	value any
}

// negative returns an error naming the first of fields whose value is
// negative, in its own unit.
func negative(fields ...field) error {
	for _, f := range fields {
		var neg bool
		switch v := f.value.(type) {
		case time.Duration:
			neg = v < 0
		case int:
			neg = v < 0
		case int64:
			neg = v < 0
		}
		if neg {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, f.name, f.value)
		}
	}
	return nil
}

func normalize(cfg *PingPongConfig) (PingPongConfig, error) {
	var c PingPongConfig
	if cfg != nil {
		c = *cfg
	}
	// The fields as the caller set them, before any default is derived
	// from another (MinReadTimeout's from ReadTimeout).
	if err := negative(field{"Duration", c.Duration}, field{"MessageSize", c.MessageSize}, field{"SpinTimeout", c.SpinTimeout},
		field{"MPS", c.MPS}, field{"ReplyEvery", c.ReplyEvery}, field{"ReadTimeout", c.ReadTimeout},
		field{"MinReadTimeout", c.MinReadTimeout}); err != nil {
		return PingPongConfig{}, err
	}
	if c.Network == "" {
		c.Network = "udp"
	}
	if c.Duration == 0 && c.Count <= 0 {
		c.Duration = defaultDuration
	}
	if c.MessageSize == 0 {
		c.MessageSize = defaultMessageSize
	}
	if c.ReplyEvery == 0 {
		c.ReplyEvery = defaultReplyEvery
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = defaultReadTimeout
	}
	if c.SpinTimeout == 0 {
		c.SpinTimeout = defaultSpinTimeout
	}
	if c.WarmUp == 0 {
		c.WarmUp = defaultWarmUp
	}
	if c.CoolDown == 0 {
		c.CoolDown = defaultCoolDown
	}
	if c.MinReadTimeout == 0 {
		c.MinReadTimeout = min(defaultMinReadTimeout, c.ReadTimeout)
	}
	c.WarmUp, c.CoolDown = max(c.WarmUp, 0), max(c.CoolDown, 0)
	switch c.Network {
	case "udp", "udp4", "udp6":
		if c.MessageSize > wire.MaxUDPMessageSize {
			return PingPongConfig{}, fmt.Errorf("%w: MessageSize %d exceeds the UDP maximum %d", ErrInvalidConfig, c.MessageSize, wire.MaxUDPMessageSize)
		}
	case "tcp", "tcp4", "tcp6":
		if c.MessageSize > 1<<24 {
			return PingPongConfig{}, fmt.Errorf("%w: MessageSize %d exceeds the TCP maximum %d (16 MiB)", ErrInvalidConfig, c.MessageSize, 1<<24)
		}
	default:
		return PingPongConfig{}, fmt.Errorf("%w: Network %q is not udp or tcp", ErrInvalidConfig, c.Network)
	}
	switch {
	case c.MessageSize < wire.HeaderSize:
		return PingPongConfig{}, fmt.Errorf("%w: MessageSize %d is below the %d-byte header", ErrInvalidConfig, c.MessageSize, wire.HeaderSize)
	case c.AdaptiveTimeout && c.MPS > 0:
		return PingPongConfig{}, fmt.Errorf("%w: AdaptiveTimeout is for ping-pong, not under-load (MPS %d)", ErrInvalidConfig, c.MPS)
	case c.AdaptiveTimeout && c.MinReadTimeout > c.ReadTimeout:
		return PingPongConfig{}, fmt.Errorf("%w: MinReadTimeout %v exceeds ReadTimeout %v", ErrInvalidConfig, c.MinReadTimeout, c.ReadTimeout)
	case c.Count <= 0 && c.WarmUp+c.CoolDown >= c.Duration:
		return PingPongConfig{}, fmt.Errorf("%w: Duration %v leaves no measurement window after WarmUp %v and CoolDown %v", ErrInvalidConfig, c.Duration, c.WarmUp, c.CoolDown)
	case c.Arrival != ArrivalUniform && c.Arrival != ArrivalPoisson:
		return PingPongConfig{}, fmt.Errorf("%w: unknown Arrival %d", ErrInvalidConfig, int(c.Arrival))
	case c.Receive != ReceiveDefault && c.Receive != ReceiveSpin:
		return PingPongConfig{}, fmt.Errorf("%w: unknown Receive %d", ErrInvalidConfig, int(c.Receive))
	}
	return c, nil
}

// PingPong measures round-trip times to a sockperf-compatible server at addr
// ("host:port"): a stock `sockperf server`, a Server of this package, or
// anything that speaks sockperf's wire format. cfg may be nil.
//
// In ping-pong (cfg.MPS == 0) each message asks for a reply and the next is
// sent when the reply arrives or ReadTimeout passes. In under-load
// (cfg.MPS > 0) messages go out at a fixed rate and replies are read on
// another goroutine.
//
// The run ends after Duration or Count. If ctx ends first, in any phase
// (dialling, warm-up, sending or waiting for replies), PingPong closes its
// socket and returns within a few milliseconds the result so far (empty if
// the dial had not finished) together with ctx.Err(). The result is never
// nil (docs/conventions.md): after any error (an invalid cfg, wrapping
// ErrInvalidConfig; a failed dial or transfer) it holds what was measured
// before it. A reply whose sequence number was never sent aborts the run,
// as in sockperf. A run that asked for replies and got none returns its
// result (with its drops) and an error wrapping ErrNoReply. A TCP server
// that closes the connection, as a Server does when a message exceeds its
// ServerConfig.MaxMessageSize, ends the run with an error that says so and
// names that limit when MessageSize is over its default.
func PingPong(ctx context.Context, addr string, cfg *PingPongConfig) (*PingPongResult, error) {
	if ctx == nil {
		return &PingPongResult{}, errNilContext
	}
	c, err := normalize(cfg)
	if err != nil {
		return &PingPongResult{}, err
	}
	rec, err := NewRecorder(c.Recorder)
	if err != nil {
		return &PingPongResult{}, err
	}
	res := &PingPongResult{
		Network:          c.Network,
		Receive:          c.Receive.String(),
		MessageSizeBytes: c.MessageSize,
		Recorder:         rec,
	}
	r := &run{cfg: c, res: res, rec: rec.Worker(), base: time.Now()}
	// Their configuration is rec's, which NewRecorder took.
	r.sendLate, _ = NewRecorder(c.Recorder)
	r.wake, _ = NewRecorder(c.Recorder)
	r.tr, err = dial(ctx, addr, &c)
	if err == nil {
		krec, _ := NewRecorder(c.Recorder)
		r.k = newKernelView(r.tr, &c, krec)
	}
	if err != nil {
		r.setWindow()
		r.finish()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return res, ctxErr
		}
		return res, err
	}
	defer r.tr.close()
	stop := context.AfterFunc(ctx, func() { r.cancelled.Store(true); r.tr.abort() })
	defer stop()
	if c.MPS == 0 {
		// ReceiveDefault's thread sleeps in the kernel, ReceiveSpin's
		// spins: either way the thread is the run's own.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if c.MPS > 0 {
		err = r.underLoad(ctx)
	} else {
		err = r.pingPong(ctx)
	}
	r.readSocketDrops()
	r.finish()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, ctxErr
	}
	if err != nil {
		return res, r.explain(err)
	}
	if r.asked > 0 && res.Received == 0 {
		return res, fmt.Errorf("%w: %d messages asked for a reply from %s (%s) and none came within ReadTimeout %v",
			ErrNoReply, r.asked, addr, c.Network, c.ReadTimeout)
	}
	return res, nil
}

// ErrNoReply is wrapped by the error of PingPong when the run asked for
// replies and received none: nothing answers at the address (a UDP server
// that is not there drops every message silently), or every reply was
// lost. The result beside it counts the messages sent and dropped.
var ErrNoReply = errors.New("latency: no reply at all")

// explain adds what a TCP server's close most likely means to the error
// of a transfer. A Server of this package (like `sockperf server`, whose
// -m defaults to the same 65507 bytes) closes a connection that announces
// a message over its limit, which the client sees as a reset or an end of
// stream with its message unanswered.
func (r *run) explain(err error) error {
	if r.cfg.Network[:3] != "tcp" || !closedByPeer(err) {
		return err
	}
	if r.cfg.MessageSize > defaultMaxMessageSize {
		return fmt.Errorf("latency: the server closed the connection, likely because MessageSize %d exceeds its maximum message size "+
			"(latency.ServerConfig.MaxMessageSize, %d bytes by default; sockperf server's -m, the same by default): %w",
			r.cfg.MessageSize, defaultMaxMessageSize, err)
	}
	return fmt.Errorf("latency: the server closed the connection: %w", err)
}

// closedByPeer says whether err is a connection the peer closed or reset.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dial connects the run's transport: ReceiveSpin's; ReceiveDefault's reads
// in the kernel where the platform allows (spinTransport without spinning),
// else Go's netpoller.
func dial(ctx context.Context, addr string, c *PingPongConfig) (transport, error) {
	if c.Receive == ReceiveSpin {
		return dialSpin(ctx, c.Network, addr, c.MessageSize, c.ReadTimeout, c.SpinTimeout, c.KernelStamps && c.MPS == 0)
	}
	tr, err := dialSpin(ctx, c.Network, addr, c.MessageSize, c.ReadTimeout, 0, c.KernelStamps && c.MPS == 0)
	if errors.Is(err, ErrSpinUnsupported) {
		return dialNet(ctx, c.Network, addr, c.MessageSize, c.ReadTimeout)
	}
	return tr, err
}

// run is the state of one PingPong call.
type run struct {
	cfg       PingPongConfig
	tr        transport
	res       *PingPongResult
	rec       *Worker
	base      time.Time
	cancelled atomic.Bool

	// window of send times (ns since base) whose samples count.
	winStart, winEnd int64
	start, end       int64

	dropped, dup, ooo, late int64
	// asked counts the messages that asked for a reply.
	asked        int64
	samples, raw []time.Duration
	// The client's own share of the measured messages: how late they
	// went out (under-load) and how long after their reply's arrival in
	// the kernel it was read.
	sendLate, wake *Recorder
	// k is the kernel-to-kernel view; nil until the run connects.
	k *kernelView
}

// woke records the receive wake-up of the reply read last, read at rx, to
// the message sent at tx. The kernel stamps arrivals on the wall clock and
// the run times on the monotonic one, which can disagree by microseconds:
// an arrival before the send is the clocks', so the wake-up is bounded by
// the round trip it is part of.
func (r *run) woke(rx, tx int64) {
	if at := r.tr.arrived(); !at.IsZero() {
		r.wake.Record(time.Duration(min(max(rx-int64(at.Sub(r.base)), 0), rx-tx)))
	}
}

func (r *run) now() int64 { return int64(time.Since(r.base)) }

func (r *run) message() []byte {
	msg := make([]byte, r.cfg.MessageSize)
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], rand.Uint64())
	rng := rand.NewChaCha8([32]byte(append(seed[:], make([]byte, 24)...)))
	_, _ = rng.Read(msg[wire.HeaderSize:])
	return msg
}

// Warm-up burst: at most warmUpMessages messages and, beyond one message,
// warmUpBytes in all.
const (
	warmUpMessages = 8
	warmUpBytes    = 64 << 10
)

// warmUpCount is the number of UDP warm-up messages of size bytes. Sent back
// to back, eight 32 KB datagrams overflow a server's default receive buffer
// (they are charged their whole buffers) and the first measured message is
// dropped behind them, so large messages get fewer, and at least one.
func warmUpCount(size int) int {
	return min(max(warmUpBytes/max(size, 1), 1), warmUpMessages)
}

// warmUp sends a few UDP messages flagged warm-up (which get no reply), as
// sockperf does before a test, so that the path is set up before measuring.
// Over TCP the connection is already set up, and sockperf 3.7's TCP server
// loses the reply to a message that arrives in the same read as warm-up
// messages, so none are sent.
func (r *run) warmUp(msg []byte, seq *uint64) error {
	if r.res.Network[:3] == "tcp" {
		return nil
	}
	for range warmUpCount(len(msg)) {
		*seq++
		wire.Header{Seq: *seq, Flags: wire.FlagClient | wire.FlagWarmup, Length: uint32(len(msg))}.Put(msg)
		if err := r.tr.write(msg); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) setWindow() {
	r.start = r.now()
	r.end = -1
	r.winStart, r.winEnd = r.start, 1<<62
	if r.cfg.Duration > 0 {
		r.end = r.start + int64(r.cfg.Duration)
		if r.cfg.Count <= 0 {
			r.winStart = r.start + int64(r.cfg.WarmUp)
			r.winEnd = r.end - int64(r.cfg.CoolDown)
		}
	}
}

func (r *run) inWindow(t int64) bool { return t >= r.winStart && t < r.winEnd }

func (r *run) keep(d time.Duration) {
	r.rec.Record(d)
	if !r.cfg.DiscardSamples {
		r.samples = append(r.samples, d)
	}
}

func (r *run) pingPong(ctx context.Context) error {
	msg := r.message()
	var seq uint64
	if err := r.warmUp(msg, &seq); err != nil {
		return err
	}
	w := newWaiter(r)
	size := uint32(len(msg))
	r.setWindow()
	// Every way out of the loop but a failure, cancellation included, goes
	// through its end, which times the run.
	for i := int64(0); r.cfg.Count <= 0 || i < r.cfg.Count; i++ {
		if i&255 == 0 && (ctx.Err() != nil || r.cancelled.Load()) {
			break
		}
		seq++
		wire.Header{Seq: seq, Flags: wire.FlagClient | wire.FlagPong, Length: size}.Put(msg)
		tx := r.now()
		if r.end >= 0 && tx >= r.end {
			break
		}
		if err := r.tr.write(msg); err != nil {
			if r.cancelled.Load() {
				break
			}
			return err
		}
		r.res.Sent++
		r.asked++
		id, hasID := r.k.sent()
		cancelled, err := w.await(seq, tx, id, hasID)
		if err != nil {
			return err
		}
		if cancelled {
			break
		}
	}
	// The run lasts as long as its messages: the final wait only collects
	// late replies, and a run cut short does not wait.
	r.res.RunTime = time.Duration(r.now() - r.start)
	if ctx.Err() == nil {
		if err := w.drain(seq); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		w.abandon(r.now())
	}
	return nil
}

// pending is the under-load record of one message that asked for a reply. Its
// table slot is reused by the message asking for a reply 65536 requests later;
// a reply (or duplicate) that arrives after that no longer matches seq and
// counts as out of order.
type pending struct {
	seq      atomic.Uint64
	intended atomic.Int64
	sent     atomic.Int64
	own      atomic.Int64 // the sender's own lateness, not charged
	got      atomic.Bool  // a reply arrived: a second one is a duplicate
}

// loadRun is the state an under-load run shares between its sender (the
// calling goroutine) and its receiver.
type loadRun struct {
	*run
	every uint64
	table []pending
	mask  uint64
	first uint64 // sequence number of the first measured message

	senderDone atomic.Bool
	lastSend   atomic.Int64
	lastSeq    atomic.Uint64

	pongsIn int64  // pongs requested inside the window (sender only)
	gotIn   int64  // and answered (receiver only)
	highest uint64 // highest reply sequence number (receiver only)

	// rb, when set, is the transport the sender receives from itself
	// while it waits (there is no receiver goroutine then).
	rb readByer
}

// readByer is a transport that can wait for a message until a deadline
// without an error at the deadline, and read while a write waits
// (spinTransport).
type readByer interface {
	readBy(deadline time.Time) (msg []byte, ok bool, err error)
	whileWriting(onReadable func() error)
}

// waitReceiving waits until intended (ns since base) on the sender's
// thread, handling the replies that arrive meanwhile: it sleeps in the
// kernel until spin/2 before intended, then receives without blocking until
// it. It reports false when the run was cancelled.
func (l *loadRun) waitReceiving(ctx context.Context, intended, spin int64) (bool, error) {
	r := l.run
	for i := 0; ; i++ {
		now := r.now()
		if now >= intended {
			return true, nil
		}
		if i&63 == 0 && (ctx.Err() != nil || r.cancelled.Load()) {
			return false, nil
		}
		by := now // a non-blocking receive
		if intended-now > spin {
			by = intended - spin/2
		}
		m, ok, err := l.rb.readBy(r.base.Add(time.Duration(by)))
		if err != nil {
			if r.cancelled.Load() {
				return false, nil
			}
			return false, err
		}
		if ok {
			if err := l.reply(m, r.now(), &l.highest); err != nil {
				return false, err
			}
		}
	}
}

func (r *run) underLoad(ctx context.Context) error {
	msg := r.message()
	var seq uint64
	if err := r.warmUp(msg, &seq); err != nil {
		return err
	}
	l := &loadRun{run: r, every: uint64(r.cfg.ReplyEvery), table: make([]pending, 1<<16)}
	l.mask = uint64(len(l.table) - 1)
	r.setWindow()
	l.first = seq + 1

	var recvErr error
	var sendErr error
	var sent int64
	if rb, ok := r.tr.(readByer); ok && r.cfg.Receive == ReceiveDefault {
		// One thread sends and, while it waits for each send time,
		// receives: a reply that arrives while it spins is read at once,
		// with no thread to wake. A TCP write that waits for flow
		// control reads the replies that arrive meanwhile.
		l.rb = rb
		rb.whileWriting(l.drain)
		sendErr = l.send(ctx, msg, seq)
		sent = r.now()
		l.senderDone.Store(true)
		if sendErr == nil {
			recvErr = l.receive(ctx)
		}
	} else {
		var wg sync.WaitGroup
		wg.Go(func() { recvErr = l.receive(ctx) })
		sendErr = l.send(ctx, msg, seq)
		sent = r.now()
		l.senderDone.Store(true)
		wg.Wait()
	}
	if sendErr != nil && !r.cancelled.Load() {
		return sendErr
	}
	if recvErr != nil {
		return recvErr
	}
	r.dropped = max(l.pongsIn-l.gotIn, 0)
	r.asked = int64(pongsSent(l.lastSeq.Load(), l.first, l.every))
	r.res.TargetMPS = r.cfg.MPS
	r.res.ReplyEvery = r.cfg.ReplyEvery
	r.res.RunTime = time.Duration(sent - r.start)
	return nil
}

// send sends messages at the configured rate until the run ends, the last
// sequence number used being seq. The intended send times come from
// Schedule's pacer, so they are fixed from the start and never burst to
// catch up; a message sent more than one interval (at most 1 ms) after its
// intended time counts as late.
func (l *loadRun) send(ctx context.Context, msg []byte, seq uint64) error {
	r := l.run
	size := uint32(len(msg))
	// The sender's thread is its own, so that its spinning and its
	// wake-ups are not shared with other goroutines.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clk := newRealClock(r.base, defaultSpin, runtime.GOMAXPROCS(0))
	// ReceiveSpin's receiver spins on a P of its own and reads its socket
	// without the poller: a sender that kept the other P would starve the
	// rest of the process, and yielding costs the replies nothing.
	clk.yield = r.cfg.Receive == ReceiveSpin
	defer clk.timer.Stop()
	pc := newPacer(r.start, float64(r.cfg.MPS), r.cfg.Arrival, 0)
	lateAfter := min(int64(time.Second)/int64(r.cfg.MPS), int64(maxLateAfter))
	// A UDP write never waits for the server; a TCP one may, for flow
	// control, and that wait is the server's.
	flowControl := !strings.HasPrefix(r.cfg.Network, "udp")
	var wrote int64 // when the last write returned
	for i := int64(0); ; i++ {
		if r.cfg.Count > 0 && i >= r.cfg.Count {
			return nil
		}
		intended := pc.next()
		if r.end >= 0 && intended >= r.end {
			return nil
		}
		if l.rb != nil {
			ok, err := l.waitReceiving(ctx, intended, clk.spin)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		} else if !clk.waitUntil(ctx, intended) || r.cancelled.Load() {
			return nil
		}
		seq++
		flags := wire.FlagClient
		now := r.now()
		if now-intended > lateAfter {
			r.res.Late++
		}
		if seq%l.every == 0 {
			flags |= wire.FlagPong
			p := &l.table[(seq/l.every)&l.mask]
			p.intended.Store(intended)
			p.got.Store(false)
			p.sent.Store(now)
			// The sender never waits for a reply: its lateness is
			// its own, past the previous write's return over TCP (a
			// write held up by flow control is the server's).
			from := intended
			if flowControl {
				from = max(intended, wrote)
			}
			p.own.Store(max(now-from, 0))
			p.seq.Store(seq)
			if r.inWindow(intended) {
				l.pongsIn++
			}
		}
		wire.Header{Seq: seq, Flags: flags, Length: size}.Put(msg)
		if err := r.tr.write(msg); err != nil {
			return err
		}
		r.res.Sent++
		wrote = r.now()
		l.lastSeq.Store(seq)
		l.lastSend.Store(wrote)
	}
}

// drain handles the replies the transport has at hand, without waiting.
func (l *loadRun) drain() error {
	for {
		m, ok, err := l.rb.readBy(time.Time{})
		if err != nil || !ok {
			return err
		}
		if err := l.reply(m, l.run.now(), &l.highest); err != nil {
			return err
		}
	}
}

// receive reads replies until the sender is done and every reply has come
// or ReadTimeout has passed since the last send, or the run is cancelled.
func (l *loadRun) receive(ctx context.Context) error {
	r := l.run
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	poll := int64(50 * time.Millisecond)
	for {
		if ctx.Err() != nil || r.cancelled.Load() {
			return nil
		}
		now := r.now()
		if l.senderDone.Load() && (now > l.lastSend.Load()+int64(r.cfg.ReadTimeout) || r.res.Received >= int64(pongsSent(l.lastSeq.Load(), l.first, l.every))) {
			return nil
		}
		m, err := r.tr.read(r.base.Add(time.Duration(now + poll)))
		if err != nil {
			if isTimeout(err) {
				continue
			}
			if r.cancelled.Load() {
				return nil
			}
			return err
		}
		if err := l.reply(m, r.now(), &l.highest); err != nil {
			return err
		}
	}
}

// reply accounts for one received message m, received at rx.
func (l *loadRun) reply(m []byte, rx int64, highest *uint64) error {
	r := l.run
	h, err := wire.DecodeHeader(m)
	if err != nil || h.Flags&wire.FlagClient != 0 || h.Seq < l.first || h.Seq%l.every != 0 {
		return nil
	}
	p := &l.table[(h.Seq/l.every)&l.mask]
	if p.seq.Load() != h.Seq {
		if h.Seq > p.seq.Load() {
			return fmt.Errorf("latency: reply with sequence number %d, which was not sent", h.Seq)
		}
		r.res.Received++
		r.ooo++ // too late to be matched any more
		return nil
	}
	r.res.Received++
	if p.got.Swap(true) {
		r.dup++
		return nil
	}
	intended := p.intended.Load()
	in := r.inWindow(intended)
	if in {
		l.gotIn++
	}
	if h.Seq < *highest {
		r.ooo++
		return nil
	}
	*highest = h.Seq
	if in {
		own := p.own.Load()
		r.keep(time.Duration(rx - intended - own))
		r.sendLate.Record(time.Duration(own))
		r.woke(rx, p.sent.Load())
		if !r.cfg.DiscardSamples {
			r.raw = append(r.raw, time.Duration(rx-p.sent.Load()))
		}
	}
	return nil
}

// pongsSent is how many replies were asked for by messages first..last.
func pongsSent(last, first, every uint64) uint64 {
	if last < first {
		return 0
	}
	return last/every - (first-1)/every
}

// readSocketDrops reads the client socket's drop counter into the result.
func (r *run) readSocketDrops() {
	c, ok := r.tr.(interface{ netConn() net.Conn })
	if !ok {
		r.res.NoSocketDrops = "the transport has no socket"
		return
	}
	if n, why := socketDrops(c.netConn()); why != "" {
		r.res.NoSocketDrops = why
	} else {
		r.res.SocketDrops = &n
	}
}

func (r *run) finish() {
	res := r.res
	if res.RunTime > 0 {
		res.AchievedMPS = float64(res.Sent) / res.RunTime.Seconds()
	}
	valid := min(r.winEnd, r.start+int64(res.RunTime)) - r.winStart
	res.ValidTime = max(time.Duration(valid), 0)
	var drop []bool // places kept for late replies that never came
	for _, d := range r.samples {
		drop = append(drop, d < 0)
	}
	if r.k != nil {
		r.k.finish(res, drop, r.cfg.Summary, !r.cfg.DiscardSamples)
	} else {
		res.NoKernelStamps = "the run did not connect"
	}
	if r.cfg.DiscardSamples {
		res.Summary = res.Recorder.Summary(r.cfg.Summary)
	} else {
		r.samples = slices.DeleteFunc(r.samples, func(d time.Duration) bool { return d < 0 })
		res.Summary = SummarizeSamples(r.samples, r.cfg.Summary)
		res.Samples = r.samples
	}
	if r.cfg.MPS > 0 {
		var raw Summary
		if r.cfg.DiscardSamples {
			raw = Summary{CILevel: res.CILevel}
		} else {
			raw = SummarizeSamples(r.raw, r.cfg.Summary)
			res.RawSamples = r.raw
		}
		res.Raw = &raw
	}
	res.Dropped, res.Duplicated, res.OutOfOrder, res.LateReplies = r.dropped, r.dup, r.ooo, r.late
	for _, x := range []struct {
		rec *Recorder
		to  **Summary
	}{{r.sendLate, &res.SendLateness}, {r.wake, &res.ReceiveWake}} {
		if x.rec != nil && x.rec.Count() > 0 {
			s := x.rec.Summary(r.cfg.Summary)
			*x.to = &s
		}
	}
	if res.Raw != nil {
		res.Raw.Dropped, res.Raw.Duplicated, res.Raw.OutOfOrder = r.dropped, r.dup, r.ooo
	}
}
