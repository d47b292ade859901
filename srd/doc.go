// Package srd verifies ENA Express, the Amazon EC2 feature that carries TCP
// and UDP over the SRD (Scalable Reliable Datagram) transport: it decodes the
// driver's ena_srd_mode, reads the EC2 API's EnaSrdSpecification and
// EnaSrdSupported as the AWS CLI prints them, measures how much eligible
// traffic SRD carried over a window of ethtool snapshots (Coverage), checks a
// host's settings the way AWS's check-ena-express-settings.sh does
// (Readiness), and runs the same-AZ / cross-AZ experiment of throughput, RTT
// and SRD counters (Experiment).
package srd
