// Package cache measures Valkey and Redis endpoints (including Amazon
// ElastiCache, node-based and serverless) the way the field study E3 did:
// where connection set-up time goes, and what connection reuse buys.
//
// Entry points:
//   - NewProber and Prober.Probe: one fresh connection, every phase timed on
//     its own (DNS, TCP connect, TLS handshake, AUTH, CLUSTER SLOTS, the first
//     command, close); Prober.Run repeats it and summarises each phase.
//   - Run: a GET/SET workload with a number of workers, pooled (each worker
//     reuses a client) or connect-per-operation (ConnectPerOp), closed-loop
//     or open-loop at WorkloadConfig.Rate on latency.Schedule.
//   - WithClientTrace: hooks around every phase of every connection, in the
//     style of net/http/httptrace, with each phase's start and duration.
//   - Endpoint: address, cluster mode, TLS and credentials, static (User,
//     Password) or per connection (Credentials; package cache/iam signs
//     ElastiCache IAM tokens for it).
//
// The prober speaks RESP itself over net.Dialer and crypto/tls because no
// client library exposes the phases. Run's built-in engine (a nil
// WorkloadConfig.Engine, named "resp") is a lean pure-Go RESP client on the
// same connection code, whose per-operation cost is close to
// redis-benchmark's. Run's ops/s counts the operations that succeeded within
// the measured window, so operations draining or timing out after it do not
// dilute it, and its latencies are those of the operations that succeeded:
// failed ones are counted (Errors, ErrorsByKind, FirstError), never timed
// as if they were GETs. Against a cluster a run also keeps, per primary's
// slots, the failures, the longest time without a success and the time to
// recover (RunResult.SlotRanges), so that a failover shows as an outage
// and not only as a few errors; the resp engine then reloads the slot map
// and resends an operation once when it failed the way a failover makes it
// fail (RunResult.Retried).
//
// Around it: cache/median runs a workload several times and reports medians
// with min-max ranges (the field study's rows) and their ratios; cache/glide
// is the valkey-glide engine, the client the field study used, so that
// running both engines on one endpoint separates the endpoint's latency from
// the client library's overhead; cache/cachetest starts real redis-server or
// valkey-server instances for tests and benchmarks.
//
// # Dependencies
//
// cache imports the standard library, package latency (and through it
// hdrhistogram-go and golang.org/x/sys) and netperfkit's internal RESP codec.
// It imports no AWS SDK (that is cache/iam), no Prometheus client and no
// valkey-glide: cache/glide is the only package that needs cgo, and cache,
// its prober, the resp engine and cachetest build with CGO_ENABLED=0 on every
// platform. A program that offers glide wires it in a file built with cgo
// (//go:build cgo) and says "glide engine not built in (needs cgo)" in its
// !cgo twin, as the example tools do.
//
// # Conventions
//
// cache follows docs/conventions.md (cancellation with partial results,
// callbacks as config fields, time.Duration in Go and units in JSON keys,
// nil configs as defaults, errors prefixed "cache: ", results never nil
// after an error). What is particular to it:
//   - A configuration out of range (negative, or above a field's documented
//     maximum: ValueSize 64 MiB, Workers 10,000,
//     KeySpace 2^31-1, Rate 10,000,000/s...) is an error naming the field
//     that wraps ErrInvalidConfig.
//   - A run in which no operation succeeded, and a Prober.Run in which no
//     probe did, return an error saying so that wraps the first failure.
//   - A failure of a probe or operation is an *Error with the Phase it
//     happened in and an ErrorKind: errors.Is(err, cache.ErrWrongPass) tests
//     the kind, errors.Is(err, syscall.ECONNREFUSED) the cause. A server's
//     error reply is classified by its first word; its text is in the
//     message, which never holds a password or token.
//   - In JSON, ProbeResult's phases_ns and total_ns, RunResult's
//     elapsed_ns and window_ns and SlotRange's longest_gap_ns and
//     recovery_ns are integer nanoseconds; latency statistics
//     (latency.Summary) are float microseconds in ..._us fields.
//   - The glide engine cannot honour a context while it creates a client,
//     which valkey-glide does without one (bounded by
//     Endpoint.ConnectTimeout), and calls no WithClientTrace hooks.
package cache
