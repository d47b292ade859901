// Package latency records and summarises latencies the way sockperf does, and
// measures them over the network with sockperf's wire format.
//
// Recording: a Recorder keeps durations in HdrHistogram form
// (github.com/HdrHistogram/hdrhistogram-go), 1 ns .. 60 s at 3 significant
// figures by default, and is safe for concurrent use without a lock on the
// hot path; Snapshot returns an hdrhistogram.Histogram copy.
//
// Statistics: Summary holds sockperf's statistics (avg, std-dev, mean-ad,
// median-ad, siqr, cv, std-error, a confidence interval and the percentiles
// 25 .. 99.999) computed with sockperf's exact definitions, either from raw
// samples (SummarizeSamples, like sockperf --full-rtt) or from a histogram
// (SummarizeHistogram).
//
// Repeated runs: Range is the median of N runs with the min-max range, and
// Aggregate and AggregateFunc compute it for any metric of any result type.
// Every package of netperfkit reports median-of-N with this family.
//
// Export: EncodeHistogram gives the compressed base64 form ("HISTFAAA..."),
// HistogramLog the interval log format, and WritePercentiles the .hgrm
// percentile distribution that HdrHistogram's tools read.
//
// Open loop: Schedule runs requests at a fixed rate (ArrivalUniform or
// ArrivalPoisson) on a bounded set of workers, with intended start times
// fixed from the start, so that the schedule neither drifts nor bursts to
// catch up. Each request records its response time (from its intended
// start, free of coordinated omission) and its service time (from its
// actual start); a request that starts late because every worker was busy
// is counted as late and still run, and those never started by the end are
// counted as unstarted. PingPong's under-load mode, package cache's
// open-loop workloads and package throughput's RTT probe use it.
// SearchRate searches for the highest rate that meets an SLO (ParseSLO:
// "p99.9=200us") with growing steps and then a bisection; SearchPingPong
// runs it on under-load ping-pong. TrimmedMean and RPM give the IETF
// responsiveness draft's round trips per minute, and Responsiveness probes a
// TCP echo server RPM-style (new connections and an established one) while
// the caller loads the path.
//
// Network: PingPong is a ping-pong and under-load client over UDP and TCP
// that works against a stock `sockperf server`; its opt-in ReceiveSpin gets
// within a few percent of sockperf's own client at the cost of a busy core.
// Its opt-in AdaptiveTimeout awaits each ping-pong reply for TCP's
// retransmission timeout of the round trips so far (RFC 6298) instead of a
// fixed ReadTimeout, so a lossy path costs a few round trips per loss; late
// replies are matched to their own messages and recorded, not dropped.
// Server is a sockperf-compatible echo server that stock `sockperf ping-pong`
// and `sockperf under-load` clients can measure, with limits that keep hostile
// peers from stopping it and an optional allow-list of client networks. Package latencytest starts in-process servers for
// tests and benchmarks.
//
// # Conventions
//
// netperfkit's packages share these conventions:
//
//   - A blocking call takes ctx first. When ctx ends, in any phase, it
//     closes its connections (rather than moving deadlines) and returns
//     within 100 ms the partial result it has together with ctx.Err():
//     PingPong returns the round trips measured so far; Serve, ServePacket
//     and ListenAndServe return ctx.Err() once every connection is closed.
//   - Callbacks are fields of the config struct (ServerConfig.OnListen and
//     OnFailure), never extra arguments. A nil config means the documented
//     defaults, which are named constants.
//   - Durations are time.Duration in Go; microsecond floats (Summary's *Us
//     fields, "p99_us") appear only in results meant for JSON and text.
//   - Median-of-N results use Range, Aggregate and AggregateFunc.
//   - Servers have a constructor (NewServer), Serve(ctx, net.Listener) for
//     any stream listener, ServePacket(ctx, net.PacketConn) for datagrams,
//     and ListenAndServe(ctx, network, addr), which reports the bound
//     address to ServerConfig.OnListen. A nil listener is refused with an
//     error, never a panic. Refused connections and rejected messages reach
//     ServerConfig.OnFailure and the counters of Server.Stats.
//   - Errors start with "latency: " and wrap their causes; the errors.Is
//     targets are ErrInvalidConfig, ErrSpinUnsupported, ErrAccessDenied,
//     ErrTooManyConns, ErrMalformed, os.ErrDeadlineExceeded and the ctx
//     errors.
package latency
