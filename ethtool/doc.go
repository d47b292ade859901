// Package ethtool reads network interface statistics the way `ethtool -S`
// prints them: from saved text (ParseText) or live from the kernel through the
// SIOCETHTOOL ioctl (Client, linux only, no CAP_NET_ADMIN needed). On top of
// the raw name/value list it offers Snapshot and Delta (per-counter
// differences and rates, with counter resets detected instead of wrapped),
// per-queue grouping with totals, a typed view of the Amazon ENA counters
// (allowance, SRD, resets) with a plain-language reading of a Delta, Watch
// for periodic sampling, and Prometheus text exposition with node_exporter's
// ethtool metric names.
//
// Statistics are always keyed by name, never by position: drivers reorder and
// add counters between versions.
package ethtool
