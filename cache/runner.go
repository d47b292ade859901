package cache

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// Engine is a client library the workload runner drives. The built-in engine
// (a nil Engine) is this package's lean pure-Go RESP client; package
// cache/glide provides valkey-glide, the client the field study used, which
// needs cgo.
type Engine interface {
	// Name names the engine in results ("resp", "glide").
	Name() string
	// Open prepares to create clients of ep, whose ConnectTimeout and
	// RequestTimeout are set (the defaults filled in: engines must pass them
	// on, glide's own 250 ms request timeout is too short for
	// connect-per-op over TLS), and returns the function that
	// creates one. That function is called concurrently by the workers. The
	// runner has already checked that ep can be reached with its credentials
	// before it calls Open. An engine that supports Endpoint.Credentials
	// calls it for every client it creates.
	Open(ctx context.Context, ep *Endpoint) (newClient func(context.Context) (Client, error), err error)
}

// Client is one client of an Engine, used by one worker goroutine at a time.
// Its errors should be *Error values classified by Kind (an error of another
// type counts as ErrServer); an operation interrupted because ctx ended is
// not counted as a failure.
type Client interface {
	Get(ctx context.Context, key string) error
	Set(ctx context.Context, key, value string) error
	Close()
}

// respName is the built-in engine's name in results.
const respName = "resp"

// ConnMode selects how a workload uses connections.
type ConnMode string

// Connection modes.
const (
	// Pooled: each worker creates one client and reuses it.
	Pooled ConnMode = "pool"
	// ConnectPerOp: each operation creates a client, runs one command and
	// closes the client; the operation's latency includes all three.
	ConnectPerOp ConnMode = "connect"
)

// Workload defaults: the field study's E3 workload.
const (
	defaultWorkers   = 4
	defaultDuration  = 20 * time.Second
	defaultKeySpace  = 10000
	defaultValueSize = 100
	defaultKeyPrefix = "netperfkit:"
	defaultSeed      = 0x6e70_6b69_7400
	maxRateWorkers   = 1024
)

// Workload limits: a larger value is refused with an error wrapping
// ErrInvalidConfig, never clamped, and never left to exhaust memory.
const (
	// maxWorkers bounds Workers (and ProbeConfig.Concurrency): one
	// goroutine and one or more connections each; 10,000 is Redis's and
	// Valkey's default maxclients.
	maxWorkers = 10_000
	// maxRate bounds Rate, per second: far beyond what one client process
	// can send (redis-benchmark, pipelined, sends about a million).
	maxRate = 10_000_000
	// maxKeySpace bounds KeySpace (2^31-1): key numbers fit an int on
	// every platform. Only the first keyTable keys are built before the
	// run; the others are built per operation.
	maxKeySpace = math.MaxInt32
	// keyTable is the number of keys built once, before a run.
	keyTable = 1 << 16
	// maxKeyPrefix bounds KeyPrefix's length in bytes.
	maxKeyPrefix = 512
	// maxValueSize bounds ValueSize, in bytes: 64 MiB, the largest value
	// the resp engine reads back (internal/resp's MaxBulk); the server's
	// own limit (proto-max-bulk-len) is 512 MB. The value is built once,
	// before the run, and shared by every SET.
	maxValueSize = 64 << 20
	// maxWeight bounds GetWeight and SetWeight (their sum must fit an int).
	maxWeight = 1_000_000
)

// WorkloadConfig configures Run. A nil *WorkloadConfig means the field
// study's workload on the built-in resp engine in pool mode: 4 workers,
// 20 s, 1:1 GET/SET over 10,000 keys of 100-byte values. A negative number
// in any field is an error, and so is a number above its field's maximum
// (each field says which); both wrap ErrInvalidConfig.
type WorkloadConfig struct {
	// Engine is the client library. Nil means the built-in pure-Go RESP
	// engine ("resp"); glide.Engine() from package cache/glide is the other.
	Engine Engine
	// Mode is Pooled or ConnectPerOp. Empty means Pooled.
	Mode ConnMode
	// Workers is the number of concurrent workers. Zero means 4, or with
	// Rate set enough to hold it at 5 ms per operation: Rate/200, at least
	// 4, at most 1024. In pool mode each worker has its own client. At
	// most 10,000 (Redis's default maxclients).
	Workers int
	// Rate, when positive (and finite), runs the workload open-loop: operations start at
	// Rate per second across all workers (latency.Schedule), whether or not
	// earlier ones have finished, and Workers bounds how many are in
	// flight. An operation due while every worker is busy waits for one and
	// counts as late; latencies run from each operation's intended start
	// (RunResult.Schedule also has them from its actual start), so a
	// server that falls behind shows in the tail instead of slowing the
	// load down; the client's own lateness is not charged to the server
	// (docs/conventions.md). The built-in RESP engine reads each reply in
	// the kernel with its arrival time (RunResult.Schedule's ReceiveWake).
	// The schedule sleeps to each start, its last milliseconds in the
	// kernel (clock_nanosleep), and never busy-waits; replies are awaited
	// asleep in the kernel, never spun for.
	// Zero means closed loop: each worker starts its next operation when
	// the last one ends. At most 10,000,000 per second.
	Rate float64
	// Arrival spaces an open-loop run's operations: latency.ArrivalUniform
	// (the zero value) or latency.ArrivalPoisson.
	Arrival latency.Arrival
	// Duration is how long operations are started for. Zero means 20 s.
	// Operations in flight at the end finish, within the Endpoint's
	// timeouts as Run details (cluster redirects can add several).
	Duration time.Duration
	// MaxOps, when positive, also stops the run after that many attempts in
	// total (benchmarks use it with b.N).
	MaxOps int64
	// GetWeight and SetWeight set the GET:SET mix. Both zero means 1:1.
	// Each is at most 1,000,000.
	GetWeight, SetWeight int
	// KeySpace is the number of distinct keys. Zero means 10,000; at most
	// 2^31-1. The first 65,536 keys are built before the run, any others
	// per operation.
	KeySpace int
	// ValueSize is the size of SET values in bytes. Zero means 100; at most
	// 64 MiB (67,108,864 bytes), the largest value the resp engine reads
	// back (the server's own limit, proto-max-bulk-len, is 512 MB).
	ValueSize int
	// KeyPrefix prefixes every key. Empty means "netperfkit:"; at most 512
	// bytes. It also seeds the key choice (and an open loop's arrivals):
	// runs with the same prefix repeat, and runs with different prefixes
	// (the shards of one load) choose differently.
	KeyPrefix string
	// seed seeds the key choice: derived from KeyPrefix by normalize.
	seed uint64
	// Interleave, when set, lets the caller run its own commands on a
	// closed-loop workload's clients between their operations (a
	// responsiveness probe on loaded connections, for instance). Before
	// every operation each worker polls it without blocking; a function
	// received from it runs on that worker's goroutine with the worker's
	// client, created first if the worker has none (c is then nil and err
	// says why when that fails). Its time is not part of any operation's
	// latency. Open-loop runs (Rate) do not poll it.
	Interleave <-chan func(ctx context.Context, c Client, err error) `json:"-"`
	// OnOperation, when set, is called after every operation (a
	// client's creation, in pool mode, is part of the first) with its
	// start, end and error (nil on success), on the worker's goroutine: it
	// must be safe for concurrent use and quick, as its time delays the
	// worker's next operation. start and end bound the operation
	// (time.Now() readings); in an open-loop run start is the operation's
	// intended start, so end-start is its response time.
	// Operations cut short because ctx ended are not reported. Package
	// latency/shard's Recorder records them into per-interval histograms.
	OnOperation func(start, end time.Time, err error) `json:"-"`
	// NoKernelView, when set, skips the kernel view (RunResult.Kernel) of
	// an open-loop pooled run. The view is taken on a sample of the
	// requests (KernelView): only a sampled request's send asks the kernel
	// for a transmit stamp and reads it back from the error queue, so the
	// others, and the application view, cost what they cost without it
	// (issue 42). Set it to spare the sampled requests that work too.
	NoKernelView bool
}

// validate reports the first field of wc that is out of range.
func (wc *WorkloadConfig) validate() error {
	negative := func(name string, v any) error {
		return invalid("WorkloadConfig.%s %v is negative", name, v)
	}
	switch {
	case wc.Mode != "" && wc.Mode != Pooled && wc.Mode != ConnectPerOp:
		return invalid("WorkloadConfig.Mode %q is neither %q nor %q", wc.Mode, Pooled, ConnectPerOp)
	case wc.Workers < 0:
		return negative("Workers", wc.Workers)
	case wc.Workers > maxWorkers:
		return invalid("WorkloadConfig.Workers %d is above the maximum of %d (Redis's default maxclients)", wc.Workers, maxWorkers)
	case wc.Rate < 0:
		return negative("Rate", wc.Rate)
	case math.IsNaN(wc.Rate) || math.IsInf(wc.Rate, 0):
		return invalid("WorkloadConfig.Rate %v is not a finite number", wc.Rate)
	case wc.Rate > maxRate:
		return invalid("WorkloadConfig.Rate %v per second is above the maximum of %d per second", wc.Rate, maxRate)
	case wc.Arrival != latency.ArrivalUniform && wc.Arrival != latency.ArrivalPoisson:
		return invalid("WorkloadConfig.Arrival %d is neither latency.ArrivalUniform nor latency.ArrivalPoisson", int(wc.Arrival))
	case wc.Duration < 0:
		return negative("Duration", wc.Duration)
	case wc.MaxOps < 0:
		return negative("MaxOps", wc.MaxOps)
	case wc.GetWeight < 0:
		return negative("GetWeight", wc.GetWeight)
	case wc.SetWeight < 0:
		return negative("SetWeight", wc.SetWeight)
	case wc.GetWeight > maxWeight:
		return invalid("WorkloadConfig.GetWeight %d is above the maximum of %d", wc.GetWeight, maxWeight)
	case wc.SetWeight > maxWeight:
		return invalid("WorkloadConfig.SetWeight %d is above the maximum of %d", wc.SetWeight, maxWeight)
	case wc.KeySpace < 0:
		return negative("KeySpace", wc.KeySpace)
	case wc.KeySpace > maxKeySpace:
		return invalid("WorkloadConfig.KeySpace %d keys is above the maximum of %d keys", wc.KeySpace, maxKeySpace)
	case wc.ValueSize < 0:
		return negative("ValueSize", wc.ValueSize)
	case wc.ValueSize > maxValueSize:
		return invalid("WorkloadConfig.ValueSize %d bytes is above the maximum of %d bytes (64 MiB)", wc.ValueSize, maxValueSize)
	case len(wc.KeyPrefix) > maxKeyPrefix:
		return invalid("WorkloadConfig.KeyPrefix is %d bytes long, above the maximum of %d bytes", len(wc.KeyPrefix), maxKeyPrefix)
	}
	return nil
}

// withDefaults validates wc and returns it with its defaults filled in.
func (wc *WorkloadConfig) withDefaults() (WorkloadConfig, error) {
	var w WorkloadConfig
	if wc != nil {
		w = *wc
	}
	if err := w.validate(); err != nil {
		return w, err
	}
	if w.Mode == "" {
		w.Mode = Pooled
	}
	if w.Rate > 0 && w.Workers <= 0 {
		w.Workers = min(max(int(math.Ceil(w.Rate/200)), defaultWorkers), maxRateWorkers)
	}
	w.Workers = orDefault(w.Workers, defaultWorkers)
	w.Duration = orDefault(w.Duration, defaultDuration)
	if w.GetWeight <= 0 && w.SetWeight <= 0 {
		w.GetWeight, w.SetWeight = 1, 1
	}
	w.GetWeight, w.SetWeight = max(w.GetWeight, 0), max(w.SetWeight, 0)
	w.KeySpace = orDefault(w.KeySpace, defaultKeySpace)
	w.ValueSize = orDefault(w.ValueSize, defaultValueSize)
	if w.KeyPrefix == "" {
		w.KeyPrefix = defaultKeyPrefix
	}
	w.seed = seedFor(w.KeyPrefix)
	return w, nil
}

// seedFor is the key choice's seed for a key prefix: the fixed default for
// the default prefix, else the default mixed with the prefix's FNV-1a hash.
func seedFor(prefix string) uint64 {
	if prefix == defaultKeyPrefix {
		return defaultSeed
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(prefix))
	return defaultSeed ^ h.Sum64()
}

// orDefault returns v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (w *WorkloadConfig) engineName() string {
	if w.Engine == nil {
		return respName
	}
	return w.Engine.Name()
}

// RunResult is one run of a workload. Its latencies are those of the
// operations that succeeded: a failed operation (an error reply such as
// DENIED or NOAUTH, a timeout, a refused connection) is counted in Errors
// and by kind, with the first error's text in FirstError, and its time is
// in no percentile, so that error replies never read as GET latencies. In
// connect mode an operation's latency covers creating the client, the
// command and closing.
//
// Run returns a RunResult whatever its error (docs/conventions.md); its
// methods are safe on a nil one.
type RunResult struct {
	Engine   string        `json:"engine"`
	Mode     ConnMode      `json:"mode"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Attempts int64         `json:"attempts"`
	// Succeeded and Errors split Attempts: the operations that succeeded
	// (within the window or after it) and those that failed. An operation
	// cut short because ctx ended is neither, and is not an attempt
	// (Schedule's Response, in an open-loop run, still holds it).
	Succeeded int64 `json:"succeeded"`
	Errors    int64 `json:"errors"`
	// ErrorsByKind counts failed attempts per ErrorKind.
	ErrorsByKind map[ErrorKind]int64 `json:"errors_by_kind"`
	// ErrorExamples holds the first message seen per kind.
	ErrorExamples map[ErrorKind]string `json:"error_examples,omitempty"`
	// FirstError is the message of the run's first failed operation, empty
	// when none failed. Like every message of this package it holds no
	// password or token (the Endpoint's Password is replaced by
	// "[redacted]" should an engine's error quote it).
	FirstError string `json:"first_error,omitempty"`
	// Window is the measured window: Duration from the first attempt, or
	// less when the run ended sooner (MaxOps, cancellation). Elapsed also
	// covers the operations in flight at the window's end draining or
	// timing out.
	Window time.Duration `json:"window_ns"`
	// SucceededInWindow counts the operations that succeeded by the end of
	// the window.
	SucceededInWindow int64 `json:"succeeded_in_window"`
	// OpsPerSec is SucceededInWindow per second of Window: operations still
	// in flight when the window ends (draining, or timing out against a
	// server that stopped answering) do not dilute it.
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency holds the statistics of the operations that succeeded (P50,
	// P99...); zero when none did.
	Latency latency.Summary `json:"latency"`
	// Histogram holds the latency of every operation that succeeded, in
	// nanoseconds, for plots and HdrHistogram exports (its Encode method);
	// nil when none did. In an open-loop run both are response times, from
	// each operation's intended start.
	Histogram *hdrhistogram.Histogram `json:"-"`
	// TargetRate is an open-loop run's WorkloadConfig.Rate (0: closed loop).
	TargetRate float64 `json:"target_rate,omitempty"`
	// Schedule is an open-loop run's schedule: achieved rate, late and
	// unstarted operations, and response times (from the intended start)
	// and service times (from the actual start) with their histograms.
	// Its Response and Service include failed operations; its
	// SuccessResponse is Latency.
	Schedule *latency.ScheduleResult `json:"schedule,omitempty"`
	// Kernel is the kernel-to-kernel view of the requests (KernelView),
	// beside Latency, the application's view, which leads. It is taken on
	// open-loop pooled runs of the resp engine on linux; nil otherwise,
	// and NoKernelStamps then says why (never zeros in its place).
	Kernel         *KernelView `json:"kernel,omitempty"`
	NoKernelStamps string      `json:"no_kernel_stamps,omitempty"`
	// Causes says what the run's connection set-ups waited on (SYN
	// retransmissions, DNS retries, lost TLS or AUTH flights, the client's
	// connection budget), counted per cause, and which of them holds the
	// p99.
	Causes Causes `json:"causes"`
	// Retried counts the operations the resp engine sent again, after a
	// timeout, a broken connection or a CLUSTERDOWN/TRYAGAIN reply made it
	// reload a cluster's slot map (once per operation): those that then
	// succeeded are in Succeeded, the others are lost, in Errors by their
	// last failure's kind. Zero for glide, whose retries are internal and
	// cannot be counted from outside, and off-cluster.
	Retried int64 `json:"retried,omitempty"`
	// SlotRanges holds, for a cluster endpoint, one entry per primary's
	// hash slots as CLUSTER SLOTS gave them before the run ("0-5460"; a
	// primary with several ranges "0-99,200-5460"): failures, the longest
	// time without a success and the time to recover, so that a failover
	// shows in the numbers (SlotRange). Nil off-cluster.
	SlotRanges map[string]SlotRange `json:"slot_ranges,omitempty"`
	// Ports is a connect-per-operation run's use of the client host's
	// ephemeral port range towards the endpoint, before and after, with
	// the sockets left in TIME_WAIT; nil in pool mode and where it cannot
	// be read (not linux).
	Ports *PortUsage `json:"ports,omitempty"`
}

// newRunResult returns the empty result of a run of cfg, named after its
// engine and mode.
func newRunResult(cfg *WorkloadConfig) *RunResult {
	r := &RunResult{Engine: respName, Mode: Pooled, ErrorsByKind: map[ErrorKind]int64{}, ErrorExamples: map[ErrorKind]string{}}
	if cfg != nil {
		r.Engine = cfg.engineName()
		if cfg.Mode != "" {
			r.Mode = cfg.Mode
		}
	}
	return r
}

// Failed reports whether r is nil, or operations ran and every one failed
// (a server answering every command with an error, a timeout on each): its
// latencies then describe nothing, and a report shows Errors and
// FirstError in their place. Run also returns an error for such a run.
func (r *RunResult) Failed() bool {
	return r == nil || (r.Attempts > 0 && r.Errors >= r.Attempts)
}

// outcome is the error of a finished run: ctx's when it ended, otherwise an
// error when no operation succeeded (with the first failure's), else nil.
func (r *RunResult) outcome(ctx context.Context, first error) error {
	switch {
	case ctxErr(ctx) != nil:
		return fmt.Errorf("cache: %w", ctxErr(ctx))
	case r.Succeeded > 0:
		return nil
	case first != nil:
		return fmt.Errorf("cache: all %d operations failed: %w", r.Attempts, first)
	}
	return fmt.Errorf("cache: no operation ran in the %v window", r.Window)
}

// recordLowest is the resolution of the histograms of operations and probe
// phases: 1 µs, the unit every cache tool reports in (redis-benchmark prints
// milliseconds with three decimals). Durations keep three significant digits
// above 2 ms. Compared with latency's 1 ns default it makes a histogram about
// a fifth as long, and summarising it (which every run and probe run does
// before returning, cancelled or not) that much cheaper.
const recordLowest = time.Microsecond

// newRecorder returns a recorder at the package's resolution.
func newRecorder() (*latency.Recorder, error) {
	rec, err := latency.NewRecorder(&latency.RecorderConfig{Lowest: recordLowest})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return rec, nil
}

// newClientFunc creates one client of an engine.
type newClientFunc = func(context.Context) (Client, error)

// Run runs the workload cfg against ep once and returns its result, never
// nil. Failed operations are counted, not fatal: Run returns an error only
// for an invalid configuration (wrapping ErrInvalidConfig), when the
// endpoint cannot be reached before the run starts (the error then says
// why: refused, TLS verification, wrong password...), when no operation
// succeeded (wrapping the first failure), or when ctx ends, with the
// partial result and an error matching ctx.Err(). It returns within about 100 ms of
// ctx ending on the resp engine. Otherwise it returns within the endpoint
// check (one connection set-up: ConnectTimeout), plus Duration, plus the
// longest operation in flight when the window ends. On the resp engine an
// operation that creates a client (every one in connect mode; in pool mode
// a worker's first, and the next after its connection broke) first takes up
// to ConnectTimeout to set a connection up (DNS, TCP, TLS, AUTH) and, in
// cluster mode, RequestTimeout for CLUSTER SLOTS. Its command then takes up
// to RequestTimeout standalone; in cluster mode it follows MOVED and ASK
// redirects for up to 5 tries, each of which may set up a connection to the
// node it goes to (ConnectTimeout) and, after an ASK, sends ASKING before
// the command: up to 5 × ConnectTimeout + 9 × RequestTimeout. When that
// fails the way a failover makes it fail (a timeout, a broken connection,
// CLUSTERDOWN), it reloads the slot map from the first other node that
// answers (a connection set-up and CLUSTER SLOTS for each node it tries)
// and may send the command once more, within the same bound again. With
// the 5 s defaults a standalone operation is bounded by 5 s (10 s when it
// creates its client); against nodes that refuse or answer, each step
// ends much sooner. Other engines bound their operations
// with their own clients' timeouts, set from the same Endpoint.
func Run(ctx context.Context, ep *Endpoint, cfg *WorkloadConfig) (*RunResult, error) {
	res := newRunResult(cfg)
	if ctx == nil {
		return res, errNilContext
	}
	if err := ep.validate(); err != nil {
		return res, err
	}
	w, err := cfg.withDefaults()
	if err != nil {
		return res, err
	}
	newClient, err := openEngine(ctx, ep, &w)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return res, err
	}
	t := &tally{res: res, secret: ep.Password.Reveal(), budget: orDefault(ep.ConnectTimeout, defaultConnectTimeout), slots: watchSlots(ctx, ep, &w), listenq: watchListen(ep.Addr)}
	var debris *portWatch
	if w.Mode == ConnectPerOp {
		debris = watchPorts(ep.Addr)
	}
	out, err := runEngine(context.WithValue(ctx, retryCount{}, t), newClient, &w, t)
	out.Retried = t.retried.Load()
	t.slots.fill(out, time.Now())
	debris.done(out)
	noteKernel(out, &w)
	return out, err
}

// openEngine checks the endpoint and opens w's engine on it.
func openEngine(ctx context.Context, ep *Endpoint, w *WorkloadConfig) (newClientFunc, error) {
	epc := *ep
	epc.RequestTimeout = orDefault(ep.RequestTimeout, defaultRequestTimeout)
	epc.ConnectTimeout = orDefault(ep.ConnectTimeout, defaultConnectTimeout)
	d, err := newDialer(&epc)
	if err != nil {
		return nil, err
	}
	// Check the endpoint once with the prober's code, so that a refused
	// connection, a certificate that does not verify or a wrong password is
	// reported as such before the run (glide would report a TLS verification
	// failure as a connection timeout).
	c, err := d.dial(ctx, d.ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("cache: endpoint check: %w", err)
	}
	c.close(context.WithoutCancel(ctx))
	if w.Engine == nil {
		e := &respEngine{d: d}
		if w.Mode == ConnectPerOp && !d.ep.TLS {
			// The endpoint's IP literal over plain TCP, on linux: a socket
			// of the engine's own (dialraw_linux.go).
			e.raw = newRawAddr(d.ep.Addr)
		}
		return e.newClient, nil
	}
	newClient, err := w.Engine.Open(ctx, &epc)
	if err != nil {
		return nil, fmt.Errorf("cache: engine %s: %w", w.Engine.Name(), err)
	}
	return newClient, nil
}

// tally collects the outcome of a run's attempts from its workers.
type tally struct {
	mu       sync.Mutex
	res      *RunResult
	first    error        // the first failure
	secret   string       // the Endpoint's password, kept out of messages
	attempts atomic.Int64 // started, only read to enforce MaxOps
	ok       atomic.Int64
	okIn     atomic.Int64 // succeeded by the end of the window
	causes   causeTally   // the workers', merged as each ends (causes.go)
	budget   time.Duration
	retried  atomic.Int64 // RunResult.Retried
	slots    *slotWatch   // nil: not a cluster
	listenq  *listenWatch // nil: not a local endpoint (listenq.go)
}

// fail counts a failed attempt and returns its kind.
func (t *tally) fail(err error) ErrorKind {
	k := kindOf(err)
	if k == "" {
		k = ErrServer
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.res.Errors++
	t.res.ErrorsByKind[k]++
	if _, seen := t.res.ErrorExamples[k]; !seen {
		t.res.ErrorExamples[k] = t.message(err)
	}
	if t.first == nil {
		t.res.FirstError = t.message(err)
		t.first = &redactedError{msg: t.res.FirstError, err: err}
	}
	return k
}

// redactedError is err with the endpoint's password taken out of its
// message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// message is err's text without the endpoint's password, should an engine
// quote it.
func (t *tally) message(err error) string {
	msg := err.Error()
	if t.secret != "" {
		msg = strings.ReplaceAll(msg, t.secret, redacted)
	}
	return msg
}

// runEngine runs the workload w on clients from newClient, into t.res.
func runEngine(ctx context.Context, newClient newClientFunc, w *WorkloadConfig, t *tally) (*RunResult, error) {
	rec, err := newRecorder()
	if err != nil {
		return t.res, err
	}
	keys := make([]string, min(w.KeySpace, keyTable))
	for i := range keys {
		keys[i] = w.KeyPrefix + strconv.Itoa(i)
	}
	wk := &worker{w: w, newClient: newClient, keys: keys, val: strings.Repeat("x", w.ValueSize), t: t}
	if w.Rate > 0 {
		return wk.runOpen(ctx)
	}
	start := time.Now()
	wk.deadline = start.Add(w.Duration)
	var wg sync.WaitGroup
	for range w.Workers {
		wg.Go(func() { wk.run(ctx, rec.Worker()) })
	}
	wg.Wait()
	res := t.res
	res.Elapsed = time.Since(start)
	res.Succeeded = t.ok.Load()
	res.Attempts = res.Errors + res.Succeeded
	res.Window, res.SucceededInWindow = w.Duration, t.okIn.Load()
	if res.Elapsed < w.Duration {
		// Ended early: every operation finished inside the window.
		res.Window, res.SucceededInWindow = res.Elapsed, t.ok.Load()
	}
	res.OpsPerSec = opsPerSec(res.SucceededInWindow, res.Window)
	if rec.Count() > 0 {
		res.Histogram = rec.Snapshot()
		res.Latency = latency.SummarizeHistogram(res.Histogram, 0)
	}
	t.fillCauses()
	return res, res.outcome(ctx, t.first)
}

// opsPerSec is n per second of d, zero for an empty window.
func opsPerSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// worker holds what every worker of one run shares.
type worker struct {
	w         *WorkloadConfig
	newClient newClientFunc
	keys      []string
	val       string
	deadline  time.Time
	t         *tally
	// ids numbers the workers, which seed their key choice with it.
	ids atomic.Uint64
}

// more reports whether a worker starts another attempt.
func (wk *worker) more(ctx context.Context) bool {
	if ctx.Err() != nil || !time.Now().Before(wk.deadline) {
		return false
	}
	return wk.w.MaxOps <= 0 || wk.t.attempts.Add(1) <= wk.w.MaxOps
}

// client is one worker's state: its key choice and, in pool mode, its
// client.
type client struct {
	wk     *worker
	rng    *rand.Rand
	total  int
	pooled Client
	// notes and causes are what its connection set-ups waited on, per
	// operation and in all (causes.go).
	notes  notes
	causes causeTally
	// key and get are the next operation's, drawn before its client is
	// created; slot is key's hash slot when the run watches a cluster's
	// slots, else -1.
	key  string
	get  bool
	slot int
}

func (wk *worker) newState(id uint64) *client {
	return &client{wk: wk, rng: rand.New(rand.NewPCG(wk.w.seed, id)), total: wk.w.GetWeight + wk.w.SetWeight}
}

// key returns key number i: from the table built before the run, or built
// now above it.
func (wk *worker) key(i int) string {
	if i < len(wk.keys) {
		return wk.keys[i]
	}
	return wk.w.KeyPrefix + strconv.Itoa(i)
}

// next draws the next operation's key and command.
func (st *client) next() {
	st.key = st.wk.key(st.rng.IntN(st.wk.w.KeySpace))
	st.get = st.rng.IntN(st.total) < st.wk.w.GetWeight
	st.slot = -1
	if st.wk.t.slots != nil {
		st.slot = keySlot(st.key)
	}
}

// op runs the drawn GET or SET on c.
func (st *client) op(ctx context.Context, c Client) error {
	if st.get {
		return c.Get(ctx, st.key)
	}
	return c.Set(ctx, st.key, st.wk.val)
}

// attempt draws and runs one operation the way the mode says.
func (st *client) attempt(ctx context.Context) error {
	st.next()
	switch {
	case st.wk.w.Mode == ConnectPerOp:
		c, err := st.wk.newClient(ctx)
		if err != nil {
			return err
		}
		err = st.op(ctx, c)
		c.Close()
		return err
	case st.pooled == nil:
		// Creating the worker's client is part of the first attempt; a
		// failure is counted and retried next time.
		var err error
		if st.pooled, err = st.wk.newClient(ctx); err != nil {
			return err
		}
	}
	return st.op(ctx, st.pooled)
}

// interleave runs f on the worker's own client, creating it if needed.
func (st *client) interleave(ctx context.Context, f func(context.Context, Client, error)) {
	if st.pooled == nil {
		var err error
		if st.pooled, err = st.wk.newClient(ctx); err != nil {
			f(ctx, nil, err)
			return
		}
	}
	f(ctx, st.pooled, nil)
}

func (st *client) close() {
	if st.pooled != nil {
		st.pooled.Close()
		st.pooled = nil
	}
}

// failed counts a failed attempt that started at t0 and took took; a
// refused reconnect or a failed lookup, which fail in microseconds, are
// paced so that a dead server or its resolver is not spun on.
func (wk *worker) failed(ctx context.Context, err error, t0 time.Time, took time.Duration) {
	if k := wk.t.fail(err); took < time.Millisecond && isFastFailure(k) {
		sleepUntil(ctx, t0.Add(time.Millisecond))
	}
}

// isFastFailure reports whether k is a failure to reach the endpoint that
// can come back at once, attempt after attempt.
func isFastFailure(k ErrorKind) bool {
	return k == ErrConnectRefused || k == ErrConnect || k == ErrDNS
}

// run is one worker's loop: attempts until the run ends, each recorded.
func (wk *worker) run(ctx context.Context, rec *latency.Worker) {
	st := wk.newState(wk.ids.Add(1) - 1)
	var succeeded, okIn int64
	defer func() {
		wk.t.ok.Add(succeeded) // once, not per operation
		wk.t.okIn.Add(okIn)
		wk.t.mergeCauses(&st.causes)
		st.close()
	}()
	ctx = withNotes(ctx, &st.notes)
	for wk.more(ctx) {
		if wk.w.Interleave != nil {
			select {
			case f := <-wk.w.Interleave:
				st.interleave(ctx, f)
			default:
			}
		}
		t0 := time.Now()
		err := st.attempt(ctx)
		t1 := time.Now()
		took := t1.Sub(t0)
		if err != nil && ctxDone(ctx) {
			return // cut short by the caller: not an endpoint failure
		}
		st.causes.takeOp(&st.notes, took, err)
		if wk.w.OnOperation != nil {
			wk.w.OnOperation(t0, t1, err)
		}
		wk.t.slots.record(st.slot, t0, t1, err)
		if err != nil {
			wk.failed(ctx, err, t0, took)
			continue
		}
		rec.Record(took)
		succeeded++
		if !t1.After(wk.deadline) {
			okIn++
		}
	}
}
