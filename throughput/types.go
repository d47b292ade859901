package throughput

import "github.com/netperfkit/netperfkit/internal/flowmodel"

// A test's settings and result live in internal/flowmodel, which
// internal/iperf3doc also reads (docs/architecture.md); these aliases are
// their names in this package.
type (
	// Config is one test's settings: see flowmodel's documentation of each field.
	Config = flowmodel.Config
	// SocketOptions are the socket-level settings of a test's streams.
	SocketOptions = flowmodel.SocketOptions
	// Result is the outcome of a test, from the side that ran it.
	Result = flowmodel.Result
	// Summary sums the streams of one direction of a test.
	Summary = flowmodel.Summary
	// Totals are the final figures of one stream or direction.
	Totals = flowmodel.Totals
	// Counts are one stream's or direction's figures, as one end counted them.
	Counts = flowmodel.Counts
	// Interval is one interval report.
	Interval = flowmodel.Interval
	// StreamInterval is one stream's share of an interval.
	StreamInterval = flowmodel.StreamInterval
	// StreamResult is the final result of one stream.
	StreamResult = flowmodel.StreamResult
	// TCPInfo is the part of a TCP sender's TCP_INFO the reports carry.
	TCPInfo = flowmodel.TCPInfo
	// TCPLimits says what held a TCP sender back (nil when unknown).
	TCPLimits = flowmodel.TCPLimits
	// CPUUtilization is iperf3's CPU usage of both hosts.
	CPUUtilization = flowmodel.CPUUtilization
	// Ledger says where the datagrams of one UDP direction went.
	Ledger = flowmodel.Ledger
	// LedgerLine is one place a datagram can end up.
	LedgerLine = flowmodel.LedgerLine
	// Event is one step of a test, as Config.OnEvent receives it.
	Event = flowmodel.Event
)

// The kinds of Event, in the order a test reports them.
const (
	EventStart    = flowmodel.EventStart
	EventInterval = flowmodel.EventInterval
	EventError    = flowmodel.EventError
	EventEnd      = flowmodel.EventEnd
)

// Names of a Ledger's lines, in the order a datagram meets them.
const (
	LineSenderRefused     = flowmodel.LineSenderRefused
	LineSenderNIC         = flowmodel.LineSenderNIC
	LineSenderAllowance   = flowmodel.LineSenderAllowance
	LinePath              = flowmodel.LinePath
	LineReceiverNIC       = flowmodel.LineReceiverNIC
	LineReceiverAllowance = flowmodel.LineReceiverAllowance
	LineReceiverBacklog   = flowmodel.LineReceiverBacklog
	LineReceiverReasm     = flowmodel.LineReceiverReasm
	LineReceiverConntrack = flowmodel.LineReceiverConntrack
	LineReceiverSocket    = flowmodel.LineReceiverSocket
	LineReceiverLate      = flowmodel.LineReceiverLate
)
