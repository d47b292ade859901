// Package srd verifies ENA Express, the Amazon EC2 feature that carries TCP
// and UDP over the SRD (Scalable Reliable Datagram) transport: it decodes the
// driver's ena_srd_mode, reads the EC2 API's EnaSrdSpecification and
// EnaSrdSupported as the AWS CLI prints them, measures how much eligible
// traffic SRD carried over a window of ethtool snapshots (Coverage), checks a
// host's settings the way AWS's check-ena-express-settings.sh does
// (Readiness), and runs the same-AZ / cross-AZ experiment of throughput, RTT
// and SRD counters (RunExperiment).
//
// # Conventions
//
// netperfkit's packages share these conventions:
//
//   - A blocking call takes ctx first and, when ctx ends, returns within
//     100 ms the partial result it has together with ctx.Err():
//     RunExperiment returns the rows so far, the last one with what its
//     runs measured before the cancel and the SRD coverage of its window.
//     The measurements close their connections rather than move deadlines.
//   - Callbacks are fields of the config struct (ExperimentConfig's
//     Throughput, RTT, Snapshot and OnPhase; ReadinessConfig.Rings), never
//     extra arguments. A nil config means the documented defaults.
//   - Durations are time.Duration in Go; results meant for JSON and text
//     carry explicit units in their names (window_seconds, p99_us,
//     bits_per_second).
//   - Median-of-N results use latency.Range, latency.Aggregate and
//     latency.AggregateFunc.
//   - The servers an experiment measures are latency.Server and
//     throughput's server, or stock sockperf and iperf3.
//   - Errors start with "srd: " and wrap their causes, so errors.Is finds
//     the ctx errors, ethtool.ErrNoInterface, os.ErrNotExist and the like.
package srd
