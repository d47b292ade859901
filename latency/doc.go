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
// (SummarizeHistogram). Aggregate and AggregateSummaries report repeated runs
// as "median of N with the min-max range".
//
// Export: EncodeHistogram gives the compressed base64 form ("HISTFAAA..."),
// HistogramLog the interval log format, and WritePercentiles the .hgrm
// percentile distribution that HdrHistogram's tools read.
//
// Network: PingPong is a ping-pong and under-load client over UDP and TCP
// that works against a stock `sockperf server`; its opt-in ModeSpin gets
// within a few percent of sockperf's own client at the cost of a busy core.
// Server is a sockperf-compatible echo server that stock `sockperf ping-pong`
// and `sockperf under-load` clients can measure, with limits that keep hostile
// peers from stopping it. Header and FrameReader are the wire format.
// Package latencytest starts in-process servers for tests and benchmarks.
package latency
