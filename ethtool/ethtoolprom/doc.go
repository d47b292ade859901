// Package ethtoolprom exposes driver statistics read with package ethtool to
// Prometheus under node_exporter's ethtool metric names, so dashboards built
// on node_exporter's ethtool collector work unchanged.
//
// Entry points:
//
//   - NewCollector: a prometheus.Collector that reads interfaces live
//     through an ethtool.Client at every scrape;
//   - NewSnapshotCollector: the same for saved snapshots;
//   - Write: snapshots in the Prometheus text format, as one scrape.
//
// A statistic's metric name is node_exporter's: "node_ethtool_" plus the
// name lower-cased with runs of characters outside [0-9A-Za-z_] turned into
// one underscore, leading underscores dropped, and the words rx and tx
// spelt received and transmitted; the seven common counters node_exporter
// pre-declares (rx_bytes ...) get their _total names.
//
// It lives apart from ethtool so that a program that only parses or reads
// statistics does not link client_golang: this package's third-party
// dependencies are github.com/prometheus/client_golang,
// github.com/prometheus/client_model and github.com/prometheus/common (and
// what they import), besides ethtool's golang.org/x/sys.
//
// Errors start with "ethtoolprom: ". The conventions every netperfkit
// package follows are in docs/conventions.md.
package ethtoolprom
