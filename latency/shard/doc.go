// Package shard splits one load test over several generator processes, on
// one host or many, and merges what they measured into one exact result.
//
// A generator given its place ("-shard 2/4", ParseSpec) takes its own part
// of the work (Spec.Part) and calls Run with a Config: Run waits for the
// common wall-clock start (Config.StartAt; a time already past is refused
// with ErrPastStart), calls the load with a record func, which files each
// operation into per-interval HDR histograms on a grid shared by every
// shard (multiples of the interval since the Unix epoch), and returns the
// shard's Result. WriteFile writes it (to a file, or to any io.Writer); Merge, or MergeFiles
// over the shards' files, returns one Merged:
//
//   - the common window: the grid intervals that every shard measured from
//     end to end, or all but Config.StartTolerance of it (by default the
//     smaller of 1 % of the interval and 10 ms), so that shards that woke
//     a few microseconds after StartAt keep their first interval; a period
//     only some shards covered never counts;
//   - the count and the throughput summed over that window, and the
//     percentiles of the sum of the shards' interval histograms (exact to
//     the histograms' precision, never an average of percentiles); values a
//     histogram could not hold are counted in OutOfRange, never dropped;
//   - a row per shard, the start skew (how late the shards started after
//     StartAt), and a generator-saturation verdict per shard (CPU near its
//     limit, the cgroup's quota where there is one, throttling by that
//     quota, or send lateness above a share of the response time), so that
//     a saturated generator is not read as the server's limit;
//   - the missing, failed and unreadable shards, by number or file, with
//     an error wrapping ErrIncomplete.
//
// Merge checks results in memory as strictly as Decode checks files: every
// shard must record with this package's histogram settings and the same
// interval and tool (ErrMismatch otherwise), and counts must be
// those their histograms hold (ErrInvalid). Start times come from each
// host's clock: their skew includes the hosts' clock offsets, which NTP or
// chrony keeps to about a millisecond on cloud hosts.
//
// For go test -bench users, latencytest's and cachetest's Benchmark write
// their histograms into the directory that the environment variable
// NETPERFKIT_BENCH_HISTOGRAMS names, and
// MergeHistogramLogs merges those of benchmarks run in several processes,
// in the HdrHistogram log format.
//
// Dependencies: hdrhistogram-go, golang.org/x/sys (through latency) and
// package latency. Conventions (units, errors, results after an error) are
// those of docs/conventions.md.
package shard
