// Package srd verifies ENA Express, the Amazon EC2 feature that carries TCP
// and UDP over the SRD (Scalable Reliable Datagram) transport, from the ENA
// driver's counters and the EC2 API's view of an interface.
//
// Entry points:
//
//   - Coverage: how much of the eligible traffic SRD carried between two
//     ethtool snapshots, with a Verdict and the reason for it;
//   - NewWindow: Coverage plus the ENI allowance deltas and which allowance
//     limited the window;
//   - Readiness: the host's settings checked the way AWS's
//     check-ena-express-settings.sh does;
//   - ParseNetworkInterfaces and SpecCheck: the EnaSrdSpecification the AWS
//     CLI prints, compared with the driver's ena_srd_mode (ExpressMode).
//
// See the package's Example for a verdict from two saved `ethtool -S`
// texts. The field study's same-AZ / cross-AZ experiment, which runs
// throughput and latency measurements around these windows, is the
// sub-package srdexperiment.
//
// Dependencies: package ethtool only (and through it golang.org/x/sys).
// Errors start with "srd: " and wrap their causes, so errors.Is finds
// os.ErrNotExist, os.ErrPermission and the like. The conventions every
// netperfkit package follows are in docs/conventions.md.
package srd
