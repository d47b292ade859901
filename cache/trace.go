package cache

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// ClientTrace is a set of hooks called while a connection is set up and used,
// in the style of net/http/httptrace. Any field may be nil. Attach a trace to a
// context with WithClientTrace; the Prober and the "resp" engine of Run call the
// hooks of the trace in the context they are given (the "glide" engine cannot:
// valkey-glide exposes no phases).
//
// Every Start hook is given the time the phase started and every Done hook the
// start, the duration and the error (nil on success), measured with the
// monotonic clock; the Prober builds its own per-phase results from these same
// values.
//
// Concurrency contract: for one connection the hooks are called one at a time,
// in phase order, synchronously on the goroutine that is working on that
// connection, and a Done hook follows every Start hook of the same phase. A
// trace attached to a context shared by concurrent work (a Prober with
// Concurrency > 1, Run with several workers) is called from several goroutines
// at once and must then be safe for concurrent use. Hooks run inside the phase
// they bracket, so their own time counts towards it: keep them short and never
// block in them. A hook must not retain the *tls.ConnectionState or the address
// slices it is given beyond the call unless it copies them.
type ClientTrace struct {
	// DNSStart is called before the host name is resolved. It is not called
	// when the address is an IP literal.
	DNSStart func(PhaseStart)
	// DNSDone is called after resolution with the addresses found.
	DNSDone func(DNSDone)
	// ConnectStart is called before the TCP connect; Addr is the resolved
	// ip:port being dialled.
	ConnectStart func(PhaseStart)
	// ConnectDone is called after the TCP connect.
	ConnectDone func(PhaseDone)
	// TLSHandshakeStart is called before the TLS handshake (TLS only).
	TLSHandshakeStart func(PhaseStart)
	// TLSHandshakeDone is called after the TLS handshake with the connection
	// state (the negotiated version, cipher suite, peer certificates).
	TLSHandshakeDone func(TLSHandshakeDone)
	// AuthStart and AuthDone bracket AUTH (only when credentials are set).
	// With IAM the time includes presigning a token when a fresh one is due.
	AuthStart func(PhaseStart)
	AuthDone  func(PhaseDone)
	// ClusterSlotsStart and ClusterSlotsDone bracket CLUSTER SLOTS (cluster
	// mode only).
	ClusterSlotsStart func(PhaseStart)
	ClusterSlotsDone  func(PhaseDone)
	// CommandStart and CommandDone bracket each other command sent on a
	// connection: the probe's first command, and every operation of the resp
	// engine. Command holds the command name only, never its arguments.
	CommandStart func(PhaseStart)
	CommandDone  func(PhaseDone)
	// CloseStart and CloseDone bracket closing the connection (for TLS, this
	// includes sending close_notify).
	CloseStart func(PhaseStart)
	CloseDone  func(PhaseDone)
}

// PhaseStart describes the start of a phase.
type PhaseStart struct {
	Phase   Phase
	Addr    string // host:port or ip:port of the node, when known
	Command string // the command name for Auth, ClusterSlots and Command phases
	Start   time.Time
}

// PhaseDone describes the end of a phase.
type PhaseDone struct {
	Phase    Phase
	Addr     string
	Command  string
	Start    time.Time
	Duration time.Duration
	Err      error // nil on success; a *ServerError for an error reply
}

// DNSDone describes the end of name resolution.
type DNSDone struct {
	PhaseDone
	Addrs []net.IPAddr
}

// TLSHandshakeDone describes the end of a TLS handshake.
type TLSHandshakeDone struct {
	PhaseDone
	State tls.ConnectionState
}

type traceKey struct{}

// WithClientTrace returns a context carrying trace. When ctx already carries a
// trace, the new trace's hooks are called first and the old ones after them,
// as net/http/httptrace does.
func WithClientTrace(ctx context.Context, trace *ClientTrace) context.Context {
	if trace == nil {
		return ctx
	}
	if old := ContextClientTrace(ctx); old != nil {
		trace = composeTrace(trace, old)
	}
	return context.WithValue(ctx, traceKey{}, trace)
}

// ContextClientTrace returns the trace carried by ctx, or nil.
func ContextClientTrace(ctx context.Context) *ClientTrace {
	t, _ := ctx.Value(traceKey{}).(*ClientTrace)
	return t
}

func composeTrace(a, b *ClientTrace) *ClientTrace {
	return &ClientTrace{
		DNSStart:          join(a.DNSStart, b.DNSStart),
		DNSDone:           join(a.DNSDone, b.DNSDone),
		ConnectStart:      join(a.ConnectStart, b.ConnectStart),
		ConnectDone:       join(a.ConnectDone, b.ConnectDone),
		TLSHandshakeStart: join(a.TLSHandshakeStart, b.TLSHandshakeStart),
		TLSHandshakeDone:  join(a.TLSHandshakeDone, b.TLSHandshakeDone),
		AuthStart:         join(a.AuthStart, b.AuthStart),
		AuthDone:          join(a.AuthDone, b.AuthDone),
		ClusterSlotsStart: join(a.ClusterSlotsStart, b.ClusterSlotsStart),
		ClusterSlotsDone:  join(a.ClusterSlotsDone, b.ClusterSlotsDone),
		CommandStart:      join(a.CommandStart, b.CommandStart),
		CommandDone:       join(a.CommandDone, b.CommandDone),
		CloseStart:        join(a.CloseStart, b.CloseStart),
		CloseDone:         join(a.CloseDone, b.CloseDone),
	}
}

func join[T any](f, g func(T)) func(T) {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return func(v T) { f(v); g(v) }
}

// startHook and doneHook pick the hooks of a command phase.
func (t *ClientTrace) commandHooks(p Phase) (func(PhaseStart), func(PhaseDone)) {
	if t == nil {
		return nil, nil
	}
	switch p {
	case PhaseAuth:
		return t.AuthStart, t.AuthDone
	case PhaseClusterSlots:
		return t.ClusterSlotsStart, t.ClusterSlotsDone
	}
	return t.CommandStart, t.CommandDone
}
