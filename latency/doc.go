// Package latency records latencies in HDR histograms, summarises them the way
// sockperf does, and measures round trips over the network with sockperf's
// wire format.
//
// Entry points:
//
//   - Recorder records durations, concurrently and without a lock on the hot
//     path (the zero Recorder is ready: 1 ns .. 60 s at 3 significant
//     figures); Snapshot gives an hdrhistogram-go Histogram, whose own API
//     encodes, logs and prints it, and Summary sockperf's statistics.
//   - PingPong measures round trips to a sockperf-compatible server (a stock
//     `sockperf server` or a Server): ping-pong, or under-load at a fixed
//     rate (PingPongConfig.MPS) measured from each message's intended send
//     time.
//   - Server (NewServer) is a sockperf-compatible echo server over UDP and
//     TCP that stock `sockperf ping-pong` and `under-load` clients can
//     measure; package latencytest starts one in-process for tests and
//     benchmarks.
//   - Schedule runs requests open-loop at a fixed rate (uniform or Poisson)
//     on a bounded set of workers, recording response times from each
//     request's intended start (free of coordinated omission) and service
//     times from its actual start.
//   - summarizeSamples and SummarizeHistogram compute sockperf's statistics
//     (avg, std-dev, mean-ad, median-ad, siqr, cv, std-error, a confidence
//     interval, percentiles 25 .. 99.999) with sockperf's exact definitions;
//     Aggregate and AggregateFunc give the median of N runs with the min-max
//     range (Range), the form every package of netperfkit reports.
//
// Built on it: latency/slo searches for the highest rate that meets a
// latency objective ("p99.9=200us"); latency/responsiveness measures
// round trips per minute (RPM) the way the IETF responsiveness draft does.
//
// PingPong's opt-in Spin gets within a few percent of sockperf's own
// client at the cost of a busy core; its opt-in AdaptiveTimeout awaits each
// reply for TCP's retransmission timeout of the round trips so far (RFC
// 6298), so a lossy path costs a few round trips per loss.
//
// Dependencies: the standard library, github.com/HdrHistogram/hdrhistogram-go
// and golang.org/x/sys (the Linux spin receive path).
//
// The package follows netperfkit's conventions, written once in
// docs/conventions.md: durations are time.Duration in Go and float
// microseconds in JSON and text ("p99_us"); a blocking call takes ctx first
// and returns within 100 ms of its end with the partial result and
// ctx.Err(); callbacks are config fields; no input makes it panic or run
// unbounded; a call that returns a result returns it non-nil whatever the
// error. Its errors.Is targets are ErrInvalidConfig, ErrNoReply (PingPong:
// replies asked for, none came), errors.ErrUnsupported (Spin off linux), ErrAccessDenied
// (not allowed, or too many connections), ErrMalformed, os.ErrDeadlineExceeded and the
// ctx errors.
package latency
