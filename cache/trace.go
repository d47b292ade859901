package cache

import (
	"context"
	"crypto/tls"
	"time"
)

// clientTrace is the pair of hooks WithClientTrace attaches to a context.
type clientTrace struct {
	// Start is given Phase, Addr and Start.
	Start func(PhaseInfo)
	// Done is given every field.
	Done func(PhaseInfo)
}

// PhaseInfo describes a phase, at its start (Phase, Addr and Start) or at
// its end.
type PhaseInfo struct {
	Phase    Phase
	Addr     string // host:port, or the resolved ip:port for connect
	Start    time.Time
	Duration time.Duration
	Err      error // nil on success; for an error reply, an error whose message is the reply

	// tlsState is the connection state (PhaseTLS only, nil on failure).
	tlsState *tls.ConnectionState
}

type traceKey struct{}

// WithClientTrace returns a context carrying a pair of hooks called around
// every phase of setting up and using a connection, in the style of
// net/http/httptrace: DNS (not for an IP literal), connect (once per address
// tried), TLS, AUTH (only with credentials), CLUSTER SLOTS (cluster mode),
// each command, and close. Either hook may be nil. The Prober and the
// built-in resp engine of Run call the hooks in the context they are given
// (the glide engine cannot: valkey-glide exposes no phases).
//
// start is given the time the phase started and done the start, the
// duration and the error (nil on success), measured with the monotonic
// clock; the Prober builds its own per-phase results from these same values.
//
// Concurrency contract: for one connection the hooks are called one at a time,
// in phase order, synchronously on the goroutine that is working on that
// connection, and a Done follows every Start of the same phase. A trace
// attached to a context shared by concurrent work (a Prober with Concurrency >
// 1, Run with several workers) is called from several goroutines at once and
// must then be safe for concurrent use. Hooks run inside the phase they
// bracket, so their own time counts towards it: keep them short and never
// block in them.
//
// When ctx already carries hooks, the new hooks are called first and the old
// ones after them, as net/http/httptrace does. Two nil hooks return ctx
// unchanged; a nil ctx is taken as context.Background().
func WithClientTrace(ctx context.Context, start, done func(PhaseInfo)) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if start == nil && done == nil {
		return ctx
	}
	trace := &clientTrace{Start: start, Done: done}
	if old := contextClientTrace(ctx); old != nil {
		trace = &clientTrace{Start: join(trace.Start, old.Start), Done: join(trace.Done, old.Done)}
	}
	return context.WithValue(ctx, traceKey{}, trace)
}

// contextClientTrace returns the trace carried by ctx, or nil.
func contextClientTrace(ctx context.Context) *clientTrace {
	t, _ := ctx.Value(traceKey{}).(*clientTrace)
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
func (t *clientTrace) start(s PhaseInfo) {
	if t != nil && t.Start != nil {
		t.Start(s)
	}
}

// done calls the Done hook, if any; t may be nil.
func (t *clientTrace) done(d PhaseInfo) {
	if t != nil && t.Done != nil {
		t.Done(d)
	}
}
