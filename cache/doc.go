// Package cache measures Valkey and Redis endpoints (including Amazon
// ElastiCache, node-based and serverless) the way the field study E3 did.
//
// A Prober opens fresh connections and times every phase on its own: DNS, TCP
// connect, TLS handshake, AUTH (password or ElastiCache IAM token), CLUSTER
// SLOTS and the first command, then close. It speaks RESP itself over net.Dialer
// and crypto/tls because no client library exposes those phases; the timings
// come from ClientTrace hooks that callers can attach too, in the style of
// net/http/httptrace.
//
// Run drives a GET/SET workload with a number of workers in two modes, pool
// (each worker reuses one client) and connect (each operation creates a client,
// runs one command and closes it). RunRepeated reports the median of several
// runs with min-max ranges, and Compare reports two configurations as ratios.
// Run's ops/s counts the operations that succeeded within the measured
// window, so operations draining or timing out after it do not dilute it.
//
// With WorkloadConfig.Rate set a run is open-loop, on latency.Schedule:
// operations start at the rate whether or not earlier ones have finished,
// latencies run from each operation's intended start (coordinated omission
// cannot hide a stalled server), and RunResult.Schedule carries the service
// times, the achieved rate and the late and unstarted operations.
// SearchRate finds the highest rate whose response-time percentile meets an
// SLO. Responsiveness measures, RPM-style, how responsive an endpoint stays
// while a pooled load saturates it: probes on new connections and on the
// loaded connections.
//
// # Engines and cgo
//
// The workload runs on an Engine. The built-in one (WorkloadConfig.Engine nil,
// named "resp") is this package's lean pure-Go RESP client, sharing the
// prober's connection code; its per-operation cost is close to
// redis-benchmark's. Package cache/glide provides glide.Engine(), valkey-glide
// v2, the client the field study used: running both on the same endpoint
// separates the endpoint's latency from the client library's overhead.
// valkey-glide needs cgo, so cache/glide is the only package that imports
// it: cache, its prober, the resp engine and cachetest build with
// CGO_ENABLED=0 on every platform. A program that offers glide wires it in a
// file built with cgo (//go:build cgo) and says "glide engine not built in
// (needs cgo)" in its !cgo twin, as the example tools do.
//
// # Conventions
//
// These are shared by every netperfkit package:
//   - Blocking calls (Prober.Probe, Prober.Run, Run, RunRepeated) take ctx
//     first and return within about 100 ms of its end, in every phase, with
//     the partial result they have and ctx.Err(): connections are closed when
//     ctx ends rather than left to their deadlines. The glide engine is the
//     exception while it creates a client, which valkey-glide does without a
//     context (bounded by Endpoint.ConnectTimeout).
//   - Callbacks are fields of the config structs: ProbeConfig.OnProbe,
//     WorkloadConfig.OnRun, and the hooks of ClientTrace.
//   - Durations are time.Duration in Go. In JSON, latency statistics are
//     microseconds as floats in fields named ..._us: latency.Summary's
//     (p50_us, p99_us...), Aggregate's p50_us and p99_us (latency.Range
//     values) and ResponsivenessResult's trimmed means. Single measured
//     durations are integer nanoseconds, time.Duration's own encoding, in
//     fields named ..._ns: ProbeResult's phases_ns (an object keyed by phase
//     name) and total_ns, and RunResult's (and latency.ScheduleResult's)
//     elapsed_ns and window_ns. Text output prints microseconds.
//   - Medians of N runs use latency's type family: Aggregate's P50Us, P99Us
//     and OpsPerSec are latency.Range values computed by latency.AggregateFunc.
//   - Errors start with "cache: " and wrap their cause. A failure of a probe or
//     operation is an *Error with the Phase it happened in and an ErrorKind:
//     errors.Is(err, cache.ErrWrongPass) tests the kind, errors.Is(err,
//     syscall.ECONNREFUSED) or errors.As(err, **replyError) the cause.
//   - Defaults are named in the field documentation: a zero field means the
//     default, a nil config means all defaults.
package cache
