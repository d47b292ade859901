// Package ethtool reads network interface statistics the way `ethtool -S`
// prints them: from saved text (ParseText) or live from the kernel through the
// SIOCETHTOOL ioctl (Client, linux only, no CAP_NET_ADMIN needed). On top of
// the raw name/value list it offers Snapshot and Delta (per-counter
// differences and rates, with counter resets detected instead of wrapped),
// per-queue grouping with totals, a typed view of the Amazon ENA counters
// (allowance, SRD, resets) with a plain-language reading of a Delta,
// Client.Watch for periodic sampling, and Prometheus text exposition with
// node_exporter's ethtool metric names.
//
// Statistics are always keyed by name, never by position: drivers reorder and
// add counters between versions.
//
// # Conventions
//
// netperfkit's packages share these conventions:
//
//   - A blocking call takes ctx first and, when ctx ends, returns within
//     100 ms with ctx.Err(): Client.Watch stops between samples at once.
//     (A single ioctl does not block.)
//   - Callbacks are fields of the config struct (WatchConfig.OnDelta),
//     never extra arguments. A nil config means the documented defaults.
//   - Durations are time.Duration in Go; rates and windows in results
//     meant for JSON carry their unit in the name (per_second, seconds).
//   - Median-of-N results use latency.Range, latency.Aggregate and
//     latency.AggregateFunc.
//   - Errors start with "ethtool: " and wrap their causes; the errors.Is
//     targets are ErrNoStats, ErrNoInterface, os.ErrNotExist,
//     os.ErrPermission, errors.ErrUnsupported (other systems) and the
//     syscall.Errno of a failed ioctl.
package ethtool
