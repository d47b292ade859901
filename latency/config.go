package latency

import (
	"errors"
	"fmt"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// errNilContext is the error of a blocking call given a nil context.
var errNilContext = errors.New("latency: nil context.Context")

// Defaults of PingPongConfig.
const (
	defaultDuration    = time.Second
	defaultMessageSize = wire.HeaderSize
	defaultReplyEvery  = 100
	defaultReadTimeout = time.Second
	defaultWarmUp      = 400 * time.Millisecond
	defaultCoolDown    = 50 * time.Millisecond
)

// PingPongConfig describes a ping-pong or under-load run. A nil
// *PingPongConfig means all defaults: a one-second UDP ping-pong with 14-byte
// messages, read on a thread that sleeps in the kernel.
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
	// Spin, when positive, receives on the raw socket from a goroutine
	// locked to its OS thread, spinning on non-blocking receives for up
	// to Spin per reply before blocking in poll(2) (1 ms is a good
	// value). It comes close to sockperf's own round-trip times but BURNS
	// A WHOLE CORE while it runs: on a 2-core machine it can starve the
	// process under test. Linux only; elsewhere PingPong returns an error
	// wrapping errors.ErrUnsupported. Zero, the default, reads on a
	// thread of its own that sleeps in the kernel (poll(2) and recv
	// outside Go's netpoller), as sockperf does: it costs an OS thread per
	// run but no CPU while it waits, and the kernel wakes it directly,
	// where a netpoller wake-up added tens of microseconds to each round
	// trip on an idle machine; elsewhere it waits through the netpoller.
	// PingPongResult's JSON "mode" says which ("spin" or "default").
	Spin time.Duration
	// MPS, when positive, makes this an under-load run like `sockperf
	// under-load`: messages are sent at a fixed rate of MPS per second and
	// only every ReplyEvery-th one asks for a reply. Zero means ping-pong.
	// Without Spin, on linux, one thread sends and, while it waits for
	// the next send time (or, over TCP, for room in the send buffer),
	// reads the replies, as sockperf does; otherwise a second thread reads
	// them.
	// Without Spin the sender sleeps to each send time (one ppoll(2) a
	// message on linux, with a 1 us timer slack; a Go timer elsewhere)
	// and each round trip ends at its reply's arrival in the kernel
	// (SO_TIMESTAMPNS, linux), not at its read, so the sleeping thread's
	// wake-up stays out of it (ReceiveWake has it): about 1-3 % of a core
	// at 1000 messages per second. With Spin it busy-waits the last 2 ms
	// before each send, as sockperf's does (when GOMAXPROCS is above 1),
	// and a run above ~500 messages per second keeps a core busy, its
	// receiver a second one. PingPongResult.CPU says what it cost.
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
	// CILevel is the confidence level of the Summary's interval around
	// the average, in percent, exclusive of 0 and 100. Zero, or a value
	// outside (0, 100), means 99; the level used is reported in
	// Summary.CILevel.
	CILevel float64
	// Recorder sets the histogram range and precision (nil means defaults).
	Recorder *RecorderConfig
	// OnMessage, when set, hears of every message that asked for a reply
	// (warm-up messages aside), in or out of the measurement window: sent
	// is when it went out (under load, its intended send time) and rtt
	// its round trip as the Summary counts it (under load, from the
	// intended time, less the sender's own lateness); err is non-nil, and
	// wraps ErrNoReply, for a message that got no reply (rtt is then
	// zero). It feeds a recorder of one's own, such as a shard's.
	//
	// It is never called concurrently with itself. In ping-pong it runs
	// on PingPong's goroutine, which sends and receives, as each reply
	// arrives or a message's timeout passes (with AdaptiveTimeout, a
	// message is reported lost only when its late reply can no longer
	// come); under load it runs on the goroutine that reads the replies,
	// and the messages left unanswered are reported as the run ends, on
	// PingPong's goroutine after that reader has returned (of the last
	// 65536 that asked for a reply). Messages a cancelled run was still
	// waiting for are not reported. Its time is the run's: in ping-pong
	// the next message waits for it, so it must return quickly.
	OnMessage func(sent time.Time, rtt time.Duration, err error)
}

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
	if err := negative(field{"Duration", c.Duration}, field{"MessageSize", c.MessageSize}, field{"Spin", c.Spin},
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
	}
	return c, nil
}
