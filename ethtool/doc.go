// Package ethtool reads network interface statistics the way `ethtool -S`
// prints them, and tells what their change over a window means.
//
// Entry points:
//
//   - ParseSnapshot: statistics from saved `ethtool -S` text
//     (or a Snapshot's JSON);
//   - Client (New): live statistics, driver information and ring sizes
//     through the SIOCETHTOOL ioctl (linux; no CAP_NET_ADMIN needed), and
//     Client.Watch for periodic sampling;
//   - Diff: the Delta between two Snapshots of one interface (per-counter
//     increases and rates, with counter resets detected instead of
//     wrapped; snapshots of two interfaces are an error);
//   - Explain and Delta.Allowance: the Amazon ENA counters' change in plain
//     language, and which ENI allowance (bandwidth, PPS, conntrack,
//     link-local) limited the traffic.
//
// GroupQueues splits statistics by hardware queue. Statistics are always
// keyed by name, never by position: drivers reorder and add counters
// between versions. See the package's Example for two saved texts diffed.
// The Prometheus exposition with node_exporter's names is in the
// sub-package ethtoolprom; the ENA Express (SRD) verdicts are in package
// srd.
//
// Dependencies: golang.org/x/sys (the ioctl) and the standard library, no
// more. Errors start with "ethtool: " and wrap their causes; the errors.Is
// targets are ErrNoStats, ErrNoInterface, os.ErrNotExist, os.ErrPermission,
// os.ErrClosed (a Client used after Close), errors.ErrUnsupported (other
// systems) and the syscall.Errno of a failed ioctl. Snapshot, ReadSnapshot,
// ParseSnapshot and Diff never return a nil result: after an error it is
// empty. The conventions every netperfkit package follows (context, units,
// callbacks, errors) are in docs/conventions.md.
package ethtool
