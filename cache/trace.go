package cache

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// ClientTrace is a pair of hooks called around every phase of setting up and
// using a connection, in the style of net/http/httptrace: DNS (not for an IP
// literal), connect (once per address tried), TLS, AUTH (only with
// credentials), CLUSTER SLOTS (cluster mode), each command, and close. Either
// field may be nil. Attach a trace to a context with WithClientTrace; the
// Prober and the built-in resp engine of Run call the hooks of the trace in
// the context they are given (the glide engine cannot: valkey-glide exposes
// no phases).
//
// Start is given the time the phase started and Done the start, the duration
// and the error (nil on success), measured with the monotonic clock; the
// Prober builds its own per-phase results from these same values.
//
// Concurrency contract: for one connection the hooks are called one at a time,
// in phase order, synchronously on the goroutine that is working on that
// connection, and a Done follows every Start of the same phase. A trace
// attached to a context shared by concurrent work (a Prober with Concurrency >
// 1, Run with several workers) is called from several goroutines at once and
// must then be safe for concurrent use. Hooks run inside the phase they
// bracket, so their own time counts towards it: keep them short and never
// block in them. A hook must not retain PhaseInfo's TLS state or address slice
// beyond the call unless it copies them.
type ClientTrace struct {
	// Start is given Phase, Addr, Command and Start.
	Start func(PhaseInfo)
	// Done is given every field that applies.
	Done func(PhaseInfo)
}

// PhaseInfo describes a phase, at its start (the first four fields) or at
// its end.
type PhaseInfo struct {
	Phase    Phase
	Addr     string // host:port, or the resolved ip:port for connect
	Command  string // the command name (never its arguments) for AUTH, CLUSTER SLOTS and commands
	Start    time.Time
	Duration time.Duration
	Err      error // nil on success; for an error reply, an error whose message is the reply
	// Addrs holds the addresses found (PhaseDNS only).
	Addrs []net.IPAddr
	// TLS is the connection state (PhaseTLS only, nil on failure): the
	// negotiated version, cipher suite, peer certificates.
	TLS *tls.ConnectionState
}

type traceKey struct{}

// WithClientTrace returns a context carrying trace. When ctx already carries a
// trace, the new trace's hooks are called first and the old ones after them,
// as net/http/httptrace does. A nil trace returns ctx unchanged; a nil ctx
// is taken as context.Background().
func WithClientTrace(ctx context.Context, trace *ClientTrace) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if trace == nil {
		return ctx
	}
	if old := contextClientTrace(ctx); old != nil {
		trace = &ClientTrace{Start: join(trace.Start, old.Start), Done: join(trace.Done, old.Done)}
	}
	return context.WithValue(ctx, traceKey{}, trace)
}

// contextClientTrace returns the trace carried by ctx, or nil.
func contextClientTrace(ctx context.Context) *ClientTrace {
	t, _ := ctx.Value(traceKey{}).(*ClientTrace)
	return t
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

// start calls the Start hook, if any; t may be nil.
func (t *ClientTrace) start(s PhaseInfo) {
	if t != nil && t.Start != nil {
		t.Start(s)
	}
}

// done calls the Done hook, if any; t may be nil.
func (t *ClientTrace) done(d PhaseInfo) {
	if t != nil && t.Done != nil {
		t.Done(d)
	}
}
