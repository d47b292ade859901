package main

import (
	"fmt"
	"strings"

	"github.com/netperfkit/netperfkit/throughput"
)

// lossBy names, for a UDP row that lost more than maxUDPLossPerc, the
// ledger line that holds most of the loss (throughput.Ledger): "receiver
// socket buffer (server)", "sender NIC allowance", "path", ...; "loss"
// when the row has no ledger.
func lossBy(r *MatrixRow) string {
	top, ok := r.Ledger.Largest()
	if !ok {
		return "loss"
	}
	send, recv := sides(r.Direction)
	switch top.Name {
	case throughput.LineReceiverSocket:
		return "receiver socket buffer (" + recv + ")"
	case throughput.LineSenderAllowance:
		return "sender NIC allowance"
	case throughput.LineReceiverAllowance:
		return "receiver NIC allowance"
	case throughput.LineSenderNIC:
		return "sender NIC (" + send + ")"
	case throughput.LineReceiverNIC:
		return "receiver NIC (" + recv + ")"
	case throughput.LineSenderRefused:
		return "sender's queue"
	case throughput.LinePath:
		return "path"
	}
	return strings.TrimPrefix(top.Name, "receiver_") + " (" + recv + ")"
}

// lossWhere is the E2 loss column's breakdown: each ledger line that holds
// datagrams, in percent of those offered ("path 1.7, receiver_socket
// 0.28"); "" without a ledger or loss.
func lossWhere(l *throughput.Ledger) string {
	if l == nil || l.Offered <= 0 {
		return ""
	}
	var parts []string
	for _, ln := range l.Lines {
		if ln.Count != nil && *ln.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2g", ln.Name, 100*float64(*ln.Count)/float64(l.Offered)))
		}
	}
	return strings.Join(parts, ", ")
}
