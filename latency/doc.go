// Package latency records and summarises latencies the way sockperf does, and
// measures them over the network with sockperf's wire format.
//
// Recording: a Recorder keeps durations in HdrHistogram form
// (github.com/HdrHistogram/hdrhistogram-go) with a documented range and
// precision, and is safe for concurrent use without a lock on the hot path.
//
// Statistics: Summary holds sockperf's statistics (avg, std-dev, mean-ad,
// median-ad, siqr, cv, std-error, a confidence interval and the percentiles
// 25 .. 99.999) computed with sockperf's exact definitions, either from raw
// samples (SummarizeSamples, like sockperf --full-rtt) or from a histogram
// (SummarizeHistogram). Aggregate summarises repeated runs as "median of N with
// the min-max range".
//
// Network: PingPong is a sockperf-compatible ping-pong and under-load client over
// UDP and TCP, and Server is a sockperf-compatible echo server.
package latency
