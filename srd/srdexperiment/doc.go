// Package srdexperiment runs the field study's same-AZ / cross-AZ
// experiment (E1): for each target, a single-flow TCP run, an N-stream TCP
// run and a UDP ping-pong, with an ethtool snapshot of the interface before
// and after each phase, so every phase has its own SRD coverage and
// allowance window (package srd).
//
// Entry points:
//
//   - Run: the experiment over a list of Targets, configured by Config;
//   - Result.WriteTable and Result.WriteWindows: the study's tables;
//   - Replay: saved snapshots as the snapshot source, to rerun the
//     verdicts of a past run.
//
// It composes throughput, latency and srd, which is why it is a package of
// its own: srd itself imports only ethtool. Its third-party dependencies are
// theirs: github.com/HdrHistogram/hdrhistogram-go and golang.org/x/sys.
//
// When ctx ends, in any phase, Run returns within 100 ms the rows so far,
// the running one with what it measured and the SRD coverage of its
// shortened window, together with ctx.Err(). Errors start with
// "srdexperiment: ". The conventions every netperfkit package follows are in
// docs/conventions.md.
package srdexperiment
