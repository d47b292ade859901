// Package shard splits one load test over several generator processes, on
// one host or many, and merges what they measured into one exact result.
//
// A generator that is given a Spec ("-shard 2/4") takes its own part of the
// work (Spec.Part), waits for a common wall-clock start (WaitUntil, which
// refuses a time already past with ErrPastStart), records every operation
// into a Recorder, whose per-interval HDR histograms are stamped with
// wall-clock times on a grid shared by every shard (multiples of the
// interval since the Unix epoch), and writes a Result (Encode). Merge (or
// MergeFiles) reads the shards' results and returns one Merged:
//
//   - the common window: only the grid intervals that every shard measured
//     from end to end; a shard's first and last intervals, partial, never
//     count, and neither does a period only some shards covered;
//   - the count and the throughput summed over that window, and the
//     percentiles of the sum of the shards' interval histograms (exact to
//     the histograms' precision, never an average of percentiles); values a
//     histogram could not hold are counted in OutOfRange, never dropped;
//   - a row per shard, the spread of the shards' start times, and a
//     generator-saturation verdict per shard (CPU near its limit, the
//     cgroup's quota where there is one, throttling by that quota, or send
//     lateness above a share of the response time), so that a saturated
//     generator is not read as the server's limit;
//   - the missing and failed shards, by number, with an error wrapping
//     ErrIncomplete.
//
// Every shard must record with the same histogram settings and interval:
// Merge refuses results that differ (ErrMismatch). Start times come from
// each host's clock: their skew includes the hosts' clock offsets, which
// NTP or chrony keeps to about a millisecond on cloud hosts.
//
// For go test -bench users, WriteHistogramLog and MergeHistogramLogs keep
// and merge the histograms of benchmarks run in several processes, in the
// HdrHistogram log format.
//
// Dependencies: hdrhistogram-go, golang.org/x/sys (through latency) and
// package latency. Conventions (units, errors, results after an error) are
// those of docs/conventions.md.
package shard
