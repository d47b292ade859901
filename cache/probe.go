package cache

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

// probePhases are the phases a probe can go through.
var probePhases = [...]Phase{PhaseDNS, PhaseConnect, PhaseTLS, PhaseAuth, PhaseClusterSlots, PhaseCommand, PhaseClose}

// phaseTotal keys the recorder of the probes' wall times.
const phaseTotal Phase = "total"

// Probe defaults.
const (
	// defaultProbeKey is the key the probe's default first command reads.
	defaultProbeKey = "netperfkit:probe"
	// defaultProbes is the number of probes of Run, as the field study.
	defaultProbes = 200
)

// Prober measures connection set-up to one endpoint, one fresh connection per
// probe. It is safe for concurrent use. Create one with NewProber: the
// methods of a zero Prober return an error.
type Prober struct {
	d *dialer
}

// errNilContext is returned by the entry points given a nil context.
var errNilContext = errors.New("cache: nil context")

// errZeroProber is returned by the methods of a Prober not made by NewProber.
var errZeroProber = errors.New("cache: Prober not created by NewProber")

// NewProber returns a Prober for ep, which it copies. It checks ep (the
// address is required, timeouts must not be negative) and makes no
// connection.
func NewProber(ep *Endpoint) (*Prober, error) {
	d, err := newDialer(ep)
	if err != nil {
		return nil, err
	}
	return &Prober{d: d}, nil
}

// ProbeResult holds the phases of one probe.
type ProbeResult struct {
	Start time.Time `json:"start"`
	Addr  string    `json:"addr"` // the resolved ip:port connected to
	// Phases holds the duration of every phase that completed: PhaseDNS (not
	// for an IP address), PhaseConnect (every address tried, failed ones
	// included), PhaseTLS, PhaseAuth (including Endpoint.Credentials, which
	// may presign an IAM token), PhaseClusterSlots, PhaseCommand (the first command, GET by
	// default; any reply completes it) and PhaseClose. A phase that did not
	// happen, or did not finish because it or an earlier one failed, is
	// absent (zero).
	Phases map[Phase]time.Duration `json:"phases_ns"`
	// Total is the wall time from the start of the probe to the end of close.
	Total time.Duration `json:"total_ns"`
	// TLSVersion is the negotiated version ("TLS 1.3"), empty without TLS.
	TLSVersion string `json:"tls_version,omitempty"`
	// Err is the classified failure (*Error), nil on success. JSON has its
	// Kind and Phase ("error_kind", "error_phase"), not its message.
	Err error `json:"-"`
	// Causes says what the probe's set-up waited on (Causes' keys), with
	// the time each phase that waited took; nil when nothing did.
	Causes *Causes `json:"causes,omitempty"`
	// notes are the causes as the dial noted them.
	notes *notes
}

// Probe runs one probe: a fresh connection through every phase, the first
// command (GET netperfkit:probe), and close. The trace in ctx, if any, is
// called as well as the prober's own. It returns the result, with the phases
// that completed, and the classified error (*Error, also in the result's
// Err). When ctx ends the connection is closed at once and the error wraps
// ctx.Err(): its kind is ErrCanceled when ctx is cancelled, and when ctx's
// deadline passes ErrTimeout, in whichever phase it passes (DNS, TLS, AUTH,
// CLUSTER SLOTS, the command), except the TCP connect, where it is
// ErrConnectTimeout as for the endpoint's ConnectTimeout. The result is never
// nil.
func (p *Prober) Probe(ctx context.Context) (*ProbeResult, error) {
	if err := p.check(ctx); err != nil {
		return &ProbeResult{Phases: map[Phase]time.Duration{}, Err: err}, err
	}
	return p.probe(ctx, []string{"GET", defaultProbeKey})
}

// check rejects a zero Prober and a nil context.
func (p *Prober) check(ctx context.Context) error {
	switch {
	case p == nil || p.d == nil:
		return errZeroProber
	case ctx == nil:
		return errNilContext
	}
	return nil
}

func (p *Prober) probe(ctx context.Context, cmd []string) (*ProbeResult, error) {
	r := &ProbeResult{Phases: make(map[Phase]time.Duration, 4)}
	ctx = WithClientTrace(ctx, nil, r.phaseDone)
	r.notes = &notes{}
	ctx = withNotes(ctx, r.notes)
	r.Start = time.Now()
	err := p.run(ctx, cmd)
	r.Total = time.Since(r.Start)
	r.noteCauses(err, p.d.ep.ConnectTimeout)
	if err != nil {
		r.Err = err
	}
	return r, err
}

// kindPhase returns Err's classification; empty when Err is nil or no *Error.
func (r *ProbeResult) kindPhase() (ErrorKind, Phase) {
	var e *Error
	if errors.As(r.Err, &e) {
		return e.Kind, e.Phase
	}
	return "", ""
}

// MarshalJSON writes the result with Err's kind and phase under
// "error_kind" and "error_phase" (omitted on success), before "causes".
func (r ProbeResult) MarshalJSON() ([]byte, error) {
	type plain ProbeResult // its fields without this method
	kind, phase := r.kindPhase()
	return json.Marshal(struct {
		plain
		ErrorKind  ErrorKind `json:"error_kind,omitempty"`
		ErrorPhase Phase     `json:"error_phase,omitempty"`
		Causes     *Causes   `json:"causes,omitempty"` // after them, as always
	}{plain(r), kind, phase, r.Causes})
}

// phaseDone records a phase: every connect attempt counts, failed ones
// included, so that the phases add up to the wall time; any reply completes
// the command, a redirect included; close always counts.
func (r *ProbeResult) phaseDone(i PhaseInfo) {
	var se *replyError
	switch {
	case i.Phase == PhaseConnect:
		r.Addr = i.Addr
		r.Phases[i.Phase] += i.Duration
	case i.Phase == PhaseClose, i.Err == nil:
		r.Phases[i.Phase] = i.Duration
	case i.Phase == PhaseCommand && errors.As(i.Err, &se):
		r.Phases[i.Phase] = i.Duration
	}
	if i.tlsState != nil {
		r.TLSVersion = tls.VersionName(i.tlsState.Version)
	}
}

func (p *Prober) run(ctx context.Context, cmd []string) error {
	c, err := p.d.dial(ctx, p.d.ep.Addr)
	if err != nil {
		return err
	}
	defer c.close(ctx)
	if p.d.ep.Cluster {
		if _, err := c.clusterSlots(ctx); err != nil {
			return err
		}
	}
	_, err = c.do(ctx, PhaseCommand, cmd...)
	// A MOVED reply to the probe's GET still measured a full round trip to a
	// live node: the first command's latency is what the probe is after.
	var se *replyError
	if errors.As(err, &se) && (se.code() == "MOVED" || se.code() == "ASK") {
		return nil
	}
	return err
}

// ProbeConfig configures Prober.Run. A nil *ProbeConfig means the defaults;
// a negative Probes is an error wrapping ErrInvalidConfig.
type ProbeConfig struct {
	// Probes is the number of probes. Zero means 200, as the field study.
	// Probes run one after another, back to back, each with GET
	// netperfkit:probe as its first command, and nothing is kept per
	// probe, so any count is accepted: ctx bounds a long run.
	Probes int

	// concurrency is the number of probes in flight at once. Zero means 1;
	// at most 10,000 (Redis's default maxclients). Tests set it.
	concurrency int
	// interval paces probe starts: probe i starts no earlier than
	// i*interval after Run starts. Zero means back to back.
	interval time.Duration
	// command is the first command. Empty means GET netperfkit:probe; an
	// empty command name is an error.
	command []string
	// onProbe, when set, is called after every probe, one call at a time.
	onProbe func(ProbeResult)
}

// validate reports the first field of c that is out of range.
func (c *ProbeConfig) validate() error {
	switch {
	case c.Probes < 0:
		return invalid("ProbeConfig.Probes %d is negative", c.Probes)
	case c.concurrency < 0:
		return invalid("ProbeConfig.concurrency %d is negative", c.concurrency)
	case c.concurrency > maxWorkers:
		return invalid("ProbeConfig.concurrency %d is above the maximum of %d (Redis's default maxclients)", c.concurrency, maxWorkers)
	case c.interval < 0:
		return invalid("ProbeConfig.interval %v is negative", c.interval)
	case len(c.command) > 0 && c.command[0] == "":
		return invalid("ProbeConfig.command has an empty command name")
	}
	return nil
}

// ProbeSummary aggregates the probes of one Run. The phase summaries and Total
// are over successful probes, so that every phase is measured on the same
// connections; failed probes are counted in ErrorsByKind. Prober.Run
// returns a ProbeSummary whatever its error (docs/conventions.md).
type ProbeSummary struct {
	Probes    int `json:"probes"`
	Succeeded int `json:"succeeded"`
	// ErrorsByKind counts failed probes (Probes - Succeeded) per ErrorKind.
	ErrorsByKind map[ErrorKind]int `json:"errors_by_kind"`
	// ErrorExamples holds the first error message seen per kind (error
	// messages never contain passwords or tokens).
	ErrorExamples map[ErrorKind]string `json:"error_examples,omitempty"`
	TLSVersion    string               `json:"tls_version,omitempty"`
	// Phases summarises each phase that happened, keyed as
	// ProbeResult.Phases; a phase that never happened is absent (a zero
	// Summary, median 0).
	Phases map[Phase]latency.Summary `json:"phases"`
	// Total summarises the probes' wall times.
	Total latency.Summary `json:"total"`
	// Causes says what the probes' set-ups waited on, per cause, and which
	// of them holds the p99 of Total.
	Causes Causes `json:"causes"`
}

// Run runs cfg.Probes probes, one at a time, and summarises
// them. Failed probes are counted by kind, not fatal, unless every probe
// failed: the error then says so and wraps the first probe's. When ctx ends
// it returns within about 100 ms with the summary so far and an error
// matching ctx.Err(): the connection of a probe in flight is closed, and
// that probe is not counted. The summary is never nil: on any error it
// holds what was measured (empty when nothing was).
func (p *Prober) Run(ctx context.Context, cfg *ProbeConfig) (*ProbeSummary, error) {
	sum := &ProbeSummary{ErrorsByKind: map[ErrorKind]int{}, ErrorExamples: map[ErrorKind]string{}, Phases: map[Phase]latency.Summary{}}
	if err := p.check(ctx); err != nil {
		return sum, err
	}
	var c ProbeConfig
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return sum, err
	}
	if c.Probes == 0 {
		c.Probes = defaultProbes
	}
	c.concurrency = min(max(c.concurrency, 1), c.Probes)
	if len(c.command) == 0 {
		c.command = []string{"GET", defaultProbeKey}
	}
	pr := &probeRun{p: p, cfg: &c, recs: map[Phase]*latency.Recorder{}, sum: sum}
	for _, ph := range append(probePhases[:], phaseTotal) {
		r, err := newRecorder()
		if err != nil {
			return sum, err
		}
		pr.recs[ph] = r
	}
	lq := watchListen(p.d.ep.Addr)
	pr.begin = time.Now()
	var wg sync.WaitGroup
	for range c.concurrency {
		wg.Go(func() { pr.worker(ctx) })
	}
	wg.Wait()
	for ph, rec := range pr.recs {
		switch {
		case rec.Count() == 0:
		case ph == phaseTotal:
			sum.Total = rec.Summary(0)
		default:
			sum.Phases[ph] = rec.Summary(0)
		}
	}
	pr.causes.listened(lq)
	sum.Causes = pr.causes.causes(respName, int64(sum.Succeeded), sum.Total.P99, p.d.ep.ConnectTimeout)
	return sum, pr.outcome(ctx)
}

// outcome is the error of a finished Run: ctx's when it ended (a probe cut
// short by ctx's deadline may see it before ctx says so, see ctxErr), an
// error when every probe failed, else nil.
func (pr *probeRun) outcome(ctx context.Context) error {
	switch {
	case ctxErr(ctx) != nil:
		return fmt.Errorf("cache: %w", ctxErr(ctx))
	case pr.sum.Succeeded > 0:
		return nil
	case pr.first != nil:
		return fmt.Errorf("cache: all %d probes failed: %w", pr.sum.Probes, pr.first)
	}
	return errors.New("cache: no probe ran")
}

// probeRun is the state one Run shares between its workers.
type probeRun struct {
	p     *Prober
	cfg   *ProbeConfig
	begin time.Time
	next  atomic.Int64
	// recs records every phase, and the total under phaseTotal.
	recs   map[Phase]*latency.Recorder
	mu     sync.Mutex
	sum    *ProbeSummary
	first  error      // the first failed probe's error
	causes causeTally // under mu
}

func (pr *probeRun) worker(ctx context.Context) {
	c := pr.cfg
	for {
		i := pr.next.Add(1) - 1
		if i >= int64(c.Probes) || ctx.Err() != nil {
			return
		}
		if c.interval > 0 {
			if !sleepUntil(ctx, pr.begin.Add(time.Duration(i)*c.interval)) {
				return
			}
		}
		r, err := pr.p.probe(ctx, c.command)
		if err != nil && ctxDone(ctx) {
			return // cut short by the caller, not a failure of the endpoint
		}
		pr.record(r, err)
	}
}

func (pr *probeRun) record(r *ProbeResult, err error) {
	if err == nil {
		for ph, d := range r.Phases {
			pr.recs[ph].Record(d)
		}
		pr.recs[phaseTotal].Record(r.Total)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	sum := pr.sum
	sum.Probes++
	if r.notes != nil {
		pr.causes.take(r.notes, r.Total, err == nil)
	}
	if err != nil {
		if pr.first == nil {
			pr.first = err
		}
		kind, _ := r.kindPhase()
		sum.ErrorsByKind[kind]++
		if _, seen := sum.ErrorExamples[kind]; !seen {
			sum.ErrorExamples[kind] = err.Error()
		}
	} else {
		sum.Succeeded++
	}
	if r.TLSVersion != "" {
		sum.TLSVersion = r.TLSVersion
	}
	if pr.cfg.onProbe != nil {
		pr.cfg.onProbe(*r)
	}
}

// sleepUntil waits until t or ctx's end and reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ctxDone reports whether ctx has ended or reached its deadline (a phase may
// fail on the deadline an instant before ctx.Err reports it).
func ctxDone(ctx context.Context) bool {
	return ctxErr(ctx) != nil
}

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed though ctx does not say so yet. A socket deadline set from ctx's
// deadline fires in the netpoller, which can be an instant before ctx's own
// timer: a probe or operation that timed out on it is cut short by the
// deadline, and the call must then return the deadline's error, not nil.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
