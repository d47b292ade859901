package latency

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

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
		return &PingPongResult{}, fmt.Errorf("latency: PingPongConfig.Recorder: %w", err)
	}
	mode := "default"
	if c.Spin > 0 {
		mode = "spin"
	}
	// One recorder from the configuration, and its empty siblings for the
	// client's own share and the kernel view.
	r := &run{cfg: c, rec: rec.Worker(), sendLate: rec.sibling(), wake: rec.sibling(), base: time.Now(),
		res: &PingPongResult{Network: c.Network, mode: mode, messageSize: c.MessageSize, Recorder: rec}}
	if r.tr, err = dial(ctx, addr, &c); err != nil {
		r.setWindow()
		r.finish()
		return r.res, cmp.Or(ctx.Err(), err)
	}
	r.k = newKernelView(r.tr, &c, rec.sibling())
	defer r.tr.close()
	stop := context.AfterFunc(ctx, func() { r.cancelled.Store(true); r.tr.abort() })
	defer stop()
	err = r.measure(ctx)
	r.readSocketDrops()
	r.finish()
	switch {
	case ctx.Err() != nil:
		return r.res, ctx.Err()
	case err != nil:
		return r.res, r.explain(err)
	case r.asked > 0 && r.res.Received == 0:
		return r.res, r.noReply(ctx, addr)
	}
	return r.res, nil
}

// measure runs the closed or the open loop.
func (r *run) measure(ctx context.Context) error {
	if r.cfg.MPS > 0 {
		return r.underLoad(ctx)
	}
	// The default mode's thread sleeps in the kernel, Spin's spins:
	// either way the thread is the run's own.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	defer func() { r.res.CPU = threadCPU() - t0 }()
	return r.pingPong(ctx)
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
	// foreign counts what came back that was not a sockperf reply (an
	// echo server's copy of the message, a datagram too short for the
	// header).
	foreign int64
}

// report calls the OnMessage hook, if any, for the message sent at tx (ns
// since base).
func (r *run) report(tx int64, rtt time.Duration, err error) {
	if r.cfg.OnMessage != nil {
		r.cfg.OnMessage(r.base.Add(time.Duration(tx)), rtt, err)
	}
}

// errLost is what OnMessage hears of a message that got no reply.
var errLost = fmt.Errorf("%w: the message got no reply within its timeout", ErrNoReply)

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
		r.k.finish(res, drop, r.cfg.CILevel, !r.cfg.DiscardSamples)
	} else {
		res.NoKernelStamps = "the run did not connect"
	}
	if r.cfg.DiscardSamples {
		res.Summary = res.Recorder.Summary(r.cfg.CILevel)
	} else {
		r.samples = slices.DeleteFunc(r.samples, func(d time.Duration) bool { return d < 0 })
		res.Summary = summarizeSamples(r.samples, r.cfg.CILevel)
		res.Samples = r.samples
	}
	if r.cfg.MPS > 0 {
		var raw Summary
		if r.cfg.DiscardSamples {
			raw = Summary{CILevel: res.CILevel}
		} else {
			raw = summarizeSamples(r.raw, r.cfg.CILevel)
		}
		res.Raw = &raw
	}
	res.Dropped, res.Duplicated, res.OutOfOrder, res.LateReplies = r.dropped, r.dup, r.ooo, r.late
	for _, x := range []struct {
		rec *Recorder
		to  **Summary
	}{{r.sendLate, &res.SendLateness}, {r.wake, &res.ReceiveWake}} {
		if x.rec != nil && x.rec.Count() > 0 {
			s := x.rec.Summary(r.cfg.CILevel)
			*x.to = &s
		}
	}
	if res.Raw != nil {
		res.Raw.Dropped, res.Raw.Duplicated, res.Raw.OutOfOrder = r.dropped, r.dup, r.ooo
	}
}

// noReply is the error of a run that asked for replies and got none. It
// names what came back instead, if anything; over UDP it checks, from an
// unconnected socket, whether the server answers from another address
// than the one asked (a multi-homed host: the connected socket never sees
// such replies).
func (r *run) noReply(ctx context.Context, addr string) error {
	head := fmt.Sprintf("%d messages asked for a reply from %s (%s)", r.asked, addr, r.cfg.Network)
	if r.foreign > 0 {
		return fmt.Errorf("%w: %s and %d messages came back, none of them a sockperf reply (an echo server "+
			"returns the client's own message): is the server sockperf-compatible (sockperf server, latency.Server)?",
			ErrNoReply, head, r.foreign)
	}
	head += fmt.Sprintf(" and none came within ReadTimeout %v", r.cfg.ReadTimeout)
	if !strings.HasPrefix(r.cfg.Network, "udp") {
		return fmt.Errorf("%w: %s", ErrNoReply, head)
	}
	from, same, err := answersFrom(ctx, addr, &r.cfg)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("%w: %s; a multi-homed server answering from another address than the one asked "+
			"is a likely cause, which a check from an unconnected socket could not tell: %v", ErrNoReply, head, err)
	case from == nil:
		return fmt.Errorf("%w: %s, nor to a check from an unconnected socket, which would have seen a multi-homed "+
			"server answering from another address: nothing answers there", ErrNoReply, head)
	case same:
		return fmt.Errorf("%w: %s, though a check from an unconnected socket got its reply from %s: the replies were lost",
			ErrNoReply, head, from)
	}
	return fmt.Errorf("%w: %s, but a check from an unconnected socket got its reply from %s: the server is multi-homed "+
		"and answers from another address than the one asked, which a connected socket never sees (send to %s, or "+
		"make the server answer from the address asked: a latency.Server does; sockperf server bound to a wildcard does not)",
		ErrNoReply, head, from, from)
}
