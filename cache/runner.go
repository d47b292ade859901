package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// Engine selects the client library a workload runs on.
type Engine string

// Engines.
const (
	// EngineGlide is valkey-glide v2, the client the field study used.
	EngineGlide Engine = "glide"
	// EngineResp is this package's lean RESP client, sharing the prober's
	// connection code; its per-operation cost is close to redis-benchmark's,
	// so it shows the endpoint's latency with little client overhead.
	EngineResp Engine = "resp"
)

// Mode selects how a workload uses connections.
type Mode string

// Modes.
const (
	// ModePool: each worker creates one client and reuses it.
	ModePool Mode = "pool"
	// ModeConnect: each operation creates a client, runs one command and
	// closes the client; the operation's latency includes all three.
	ModeConnect Mode = "connect"
)

// WorkloadConfig configures Run. A nil *WorkloadConfig means the field study's
// workload on the glide engine in pool mode: 4 workers, 20 s, 1:1 GET/SET.
type WorkloadConfig struct {
	// Engine is the client library. Empty means EngineGlide.
	Engine Engine
	// Mode is pool or connect. Empty means ModePool.
	Mode Mode
	// Workers is the number of concurrent workers. Zero means 4.
	Workers int
	// Duration is how long operations are started for. Zero means 20 s.
	// Operations in flight at the end finish (bounded by RequestTimeout).
	Duration time.Duration
	// MaxOps, when positive, also stops the run after that many attempts in
	// total (benchmarks use it with b.N).
	MaxOps int64
	// GetWeight and SetWeight set the GET:SET mix. Both zero means 1:1.
	GetWeight, SetWeight int
	// KeySpace is the number of distinct keys. Zero means 10,000.
	KeySpace int
	// ValueSize is the size of SET values in bytes. Zero means 100.
	ValueSize int
	// KeyPrefix prefixes every key. Empty means "netperfkit:".
	KeyPrefix string
	// RequestTimeout bounds each operation. Zero means the Endpoint's
	// RequestTimeout (5 s by default). It is passed to glide explicitly,
	// whose own 250 ms default is too short for connect-per-op over TLS.
	RequestTimeout time.Duration
	// ConnectTimeout bounds creating a client. Zero means the Endpoint's
	// ConnectTimeout (5 s by default).
	ConnectTimeout time.Duration
	// Seed seeds the key choice; zero means a fixed default, so runs repeat.
	Seed uint64
}

// ParseRatio parses a "GET:SET" ratio such as "1:1" or "9:1".
func ParseRatio(s string) (get, set int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		get, err = strconv.Atoi(a)
		if err == nil {
			set, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || get < 0 || set < 0 || get+set == 0 {
		return 0, 0, fmt.Errorf("cache: ratio %q is not GET:SET with non-negative integers", s)
	}
	return get, set, nil
}

func (c *WorkloadConfig) withDefaults(ep *Endpoint) WorkloadConfig {
	var w WorkloadConfig
	if c != nil {
		w = *c
	}
	if w.Engine == "" {
		w.Engine = EngineGlide
	}
	if w.Mode == "" {
		w.Mode = ModePool
	}
	if w.Workers <= 0 {
		w.Workers = 4
	}
	if w.Duration <= 0 {
		w.Duration = 20 * time.Second
	}
	if w.GetWeight <= 0 && w.SetWeight <= 0 {
		w.GetWeight, w.SetWeight = 1, 1
	}
	w.GetWeight, w.SetWeight = max(w.GetWeight, 0), max(w.SetWeight, 0)
	if w.KeySpace <= 0 {
		w.KeySpace = 10000
	}
	if w.ValueSize <= 0 {
		w.ValueSize = 100
	}
	if w.KeyPrefix == "" {
		w.KeyPrefix = "netperfkit:"
	}
	if w.RequestTimeout <= 0 {
		w.RequestTimeout = ep.RequestTimeout
	}
	if w.RequestTimeout <= 0 {
		w.RequestTimeout = DefaultRequestTimeout
	}
	if w.ConnectTimeout <= 0 {
		w.ConnectTimeout = ep.ConnectTimeout
	}
	if w.ConnectTimeout <= 0 {
		w.ConnectTimeout = DefaultConnectTimeout
	}
	if w.Seed == 0 {
		w.Seed = 0x6e70_6b69_7400
	}
	return w
}

// RunResult is one run of a workload. Latencies include failed operations,
// with the time they took, as the field study did; in connect mode an
// operation's latency covers creating the client, the command and closing.
type RunResult struct {
	Engine   Engine        `json:"engine"`
	Mode     Mode          `json:"mode"`
	Workers  int           `json:"workers"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Attempts int64         `json:"attempts"`
	Errors   int64         `json:"errors"`
	// ErrorsByKind counts failed attempts per ErrorKind.
	ErrorsByKind map[ErrorKind]int64 `json:"errors_by_kind"`
	// ErrorExamples holds the first message seen per kind.
	ErrorExamples map[ErrorKind]string `json:"error_examples,omitempty"`
	// OpsPerSec is successful operations per second of Elapsed.
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Us     float64 `json:"p50_us"`
	P99Us     float64 `json:"p99_us"`
	// Latency holds the full statistics of every attempt.
	Latency latency.Summary `json:"latency"`
	// Histogram holds every attempt's latency in nanoseconds, for plots and
	// HdrHistogram exports (latency.EncodeHistogram); nil when nothing ran.
	Histogram *hdrhistogram.Histogram `json:"-"`
}

// engine creates clients; client runs operations. A client is used by one
// goroutine at a time.
type engine interface {
	newClient(ctx context.Context) (client, error)
}

type client interface {
	get(ctx context.Context, key string) error
	set(ctx context.Context, key, value string) error
	close()
}

// Run runs the workload cfg against ep once and returns its result. Failed
// operations are counted, not fatal: Run returns an error only for an invalid
// configuration, when the endpoint cannot be reached before the run starts
// (the error then says why: refused, TLS verification, wrong password...), or
// when ctx ends (with the partial result). It returns within Duration plus
// about one RequestTimeout (or ConnectTimeout in connect mode).
func Run(ctx context.Context, ep *Endpoint, cfg *WorkloadConfig) (*RunResult, error) {
	if ep == nil {
		return nil, errors.New("cache: nil endpoint")
	}
	w := cfg.withDefaults(ep)
	e, err := newEngine(ctx, ep, &w)
	if err != nil {
		return nil, err
	}
	return runEngine(ctx, e, &w)
}

func newEngine(ctx context.Context, ep *Endpoint, w *WorkloadConfig) (engine, error) {
	epc := *ep
	epc.RequestTimeout, epc.ConnectTimeout = w.RequestTimeout, w.ConnectTimeout
	d, err := newDialer(ctx, &epc)
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
	switch w.Engine {
	case EngineResp:
		return &respEngine{d: d}, nil
	case EngineGlide:
		if epc.IAM != nil && epc.IAM.Region == "" {
			// glide needs the region the token source found in the AWS
			// configuration.
			iam := *epc.IAM
			iam.Region = d.tokens.region
			epc.IAM = &iam
		}
		return newGlideEngine(&epc, w)
	}
	return nil, fmt.Errorf("cache: unknown engine %q (want %q or %q)", w.Engine, EngineGlide, EngineResp)
}

func runEngine(ctx context.Context, e engine, w *WorkloadConfig) (*RunResult, error) {
	if w.Mode != ModePool && w.Mode != ModeConnect {
		return nil, fmt.Errorf("cache: unknown mode %q (want %q or %q)", w.Mode, ModePool, ModeConnect)
	}
	rec, err := latency.NewRecorder(nil)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	keys := make([]string, w.KeySpace)
	for i := range keys {
		keys[i] = w.KeyPrefix + strconv.Itoa(i)
	}
	val := strings.Repeat("x", w.ValueSize)
	res := &RunResult{Engine: w.Engine, Mode: w.Mode, Workers: w.Workers,
		ErrorsByKind: map[ErrorKind]int64{}, ErrorExamples: map[ErrorKind]string{}}
	var (
		mu       sync.Mutex
		attempts atomic.Int64
		ok       atomic.Int64
		wg       sync.WaitGroup
	)
	// fail counts a failed attempt and returns its kind.
	fail := func(err error) ErrorKind {
		k := KindOf(err)
		if k == "" {
			k = ErrServer
		}
		mu.Lock()
		res.Errors++
		res.ErrorsByKind[k]++
		if _, seen := res.ErrorExamples[k]; !seen {
			res.ErrorExamples[k] = err.Error()
		}
		mu.Unlock()
		return k
	}
	start := time.Now()
	deadline := start.Add(w.Duration)
	more := func() bool {
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		// attempts is only read to enforce MaxOps.
		return w.MaxOps <= 0 || attempts.Add(1) <= w.MaxOps
	}
	for i := range w.Workers {
		wg.Go(func() {
			wr := rec.Worker()
			rng := rand.New(rand.NewPCG(w.Seed, uint64(i)))
			total := w.GetWeight + w.SetWeight
			op := func(ctx context.Context, c client) error {
				key := keys[rng.IntN(len(keys))]
				if rng.IntN(total) < w.GetWeight {
					return c.get(ctx, key)
				}
				return c.set(ctx, key, val)
			}
			var (
				pooled    client
				succeeded int64
			)
			defer func() { ok.Add(succeeded) }() // once, not per operation
			defer func() {
				if pooled != nil {
					pooled.close()
				}
			}()
			for more() {
				t0 := time.Now()
				var err error
				switch {
				case w.Mode == ModeConnect:
					var c client
					if c, err = e.newClient(ctx); err == nil {
						err = op(ctx, c)
						c.close()
					}
				case pooled == nil:
					// Creating the worker's client is part of the first
					// attempt; a failure is counted and retried next time.
					if pooled, err = e.newClient(ctx); err == nil {
						err = op(ctx, pooled)
					}
				default:
					err = op(ctx, pooled)
				}
				took := time.Since(t0)
				if err != nil && ctxDone(ctx) {
					return // cut short by the caller: not an endpoint failure
				}
				wr.Record(took)
				if err != nil {
					if k := fail(err); took < time.Millisecond && (k == ErrConnectRefused || k == ErrConnect) {
						// A refused reconnect fails in microseconds: pace
						// retries so that a dead server is not spun on.
						sleepUntil(ctx, t0.Add(time.Millisecond))
					}
					continue
				}
				succeeded++
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Attempts = res.Errors + ok.Load()
	res.OpsPerSec = float64(ok.Load()) / res.Elapsed.Seconds()
	if rec.Count() > 0 {
		res.Latency = rec.Summary(nil)
		res.Histogram = rec.Snapshot()
		res.P50Us, res.P99Us = res.Latency.P50Us, res.Latency.P99Us
	}
	return res, ctx.Err()
}
