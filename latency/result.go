package latency

import (
	"errors"
	"fmt"
	"time"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// PingPongResult is the outcome of PingPong. The embedded Summary describes
// the round-trip times (what sockperf prints with --full-rtt; sockperf's
// default "latency" is half of it) of the messages in the measurement window;
// in an under-load run they are measured from each message's INTENDED send
// time, which keeps a stalled server from hiding its stall (coordinated
// omission), less the sender's own lateness (SendLateness), to the reply's
// arrival in the client's kernel where it is stamped (linux), and Raw holds
// the plain send-to-reply statistics.
type PingPongResult struct {
	Summary
	// Network is the run's network; JSON also has its receive mode
	// ("mode": "default", or "spin" with PingPongConfig.Spin) and its
	// message size, header included ("message_size_bytes",
	// PingPongConfig.MessageSize).
	Network string `json:"network"`
	mode    string
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
	// AchievedMPS is the rate actually sent (an under-load run's
	// configured rate and reply ratio are in JSON only, "target_mps" and
	// "reply_every": the caller's PingPongConfig has them).
	AchievedMPS float64 `json:"achieved_mps"`
	targetMPS   int
	replyEvery  int
	messageSize int
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
	// read's return: inside a ping-pong run's round trips, outside an
	// under-load run's, which end at that arrival (the sender that sleeps
	// between its sends would otherwise add its wake-up to each).
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
	// CPU is the CPU time (user and system) the run's own threads used:
	// the thread that sends and receives, and Spin's receiving thread
	// under load; what the probe costs its host. JSON has it in seconds
	// ("cpu_seconds", left out when zero). Zero where the platform does not tell a thread's
	// CPU time (linux does).
	CPU time.Duration `json:"-"`
	// SocketDrops is the kernel's drop counter of the client's socket at
	// the run's end (SO_MEMINFO's SK_MEMINFO_DROPS, linux): replies the
	// kernel dropped on their way into it, mostly for a full receive
	// buffer, which Dropped otherwise counts as lost on the path. Nil
	// when it could not be read, and NoSocketDrops then says why (never a
	// zero in its place).
	SocketDrops   *int64 `json:"socket_drops,omitempty"`
	NoSocketDrops string `json:"no_socket_drops,omitempty"`
	// Samples holds every measured round trip in send order, unless
	// DiscardSamples was set.
	Samples []time.Duration `json:"-"`
	// Recorder holds the measured round trips as a histogram.
	Recorder *Recorder `json:"-"`
}

// fields is the result's wire form, for MarshalJSON and UnmarshalJSON
// alike: the Summary's fields first, durations in float microseconds and
// the run's lengths in seconds.
func (r *PingPongResult) fields() []usec.Field {
	v, o := usec.Value, usec.OmitEmpty
	return append(r.Summary.fields(),
		v("network", &r.Network), v("mode", &r.mode), v("message_size_bytes", &r.messageSize),
		v("sent", &r.Sent), v("received", &r.Received),
		usec.Seconds("run_seconds", &r.RunTime), usec.Seconds("valid_seconds", &r.ValidTime),
		o("target_mps", &r.targetMPS), v("achieved_mps", &r.AchievedMPS), o("reply_every", &r.replyEvery),
		o("late", &r.Late), o("late_replies", &r.LateReplies), o("raw", &r.Raw),
		o("send_lateness", &r.SendLateness), o("receive_wake", &r.ReceiveWake),
		o("kernel_rtt", &r.KernelRTT), o("kernel_stamps_lost", &r.KernelStampsLost), o("no_kernel_stamps", &r.NoKernelStamps),
		usec.SecondsOmitEmpty("cpu_seconds", &r.CPU), o("socket_drops", &r.SocketDrops), o("no_socket_drops", &r.NoSocketDrops))
}

// MarshalJSON writes the result in the form netperfkit has always written:
// the Summary's fields at the top level in microseconds, "run_seconds" and
// "valid_seconds" in seconds, and an under-load run's rate and reply ratio
// ("target_mps", "reply_every"). Samples and Recorder are not written.
func (r PingPongResult) MarshalJSON() ([]byte, error) { return usec.Marshal(r.fields()...) }

// UnmarshalJSON reads what MarshalJSON writes, rounding durations to the
// nanosecond.
func (r *PingPongResult) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("latency: ping-pong result: UnmarshalJSON into a nil pointer")
	}
	*r = PingPongResult{}
	if err := usec.Unmarshal(b, r.fields()...); err != nil {
		return fmt.Errorf("latency: ping-pong result: %w", err)
	}
	return nil
}
