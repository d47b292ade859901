package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/throughput"
)

func n64(v int64) *int64 { return &v }

func TestLossByLedger(t *testing.T) {
	l := &throughput.Ledger{Offered: 1000, Received: 900, Lines: []throughput.LedgerLine{
		{Name: throughput.LinePath, Count: n64(20)},
		{Name: throughput.LineReceiverSocket, Count: n64(80)},
		{Name: throughput.LineSenderAllowance},
	}}
	r := &MatrixRow{Protocol: "udp", Direction: "upload", LostPercent: 10, Ledger: l}
	by, detail := limitedBy(r, 0, 2)
	assert.Equal(t, "receiver socket buffer (server)", by)
	assert.Contains(t, detail, "10.0% lost")
	r.Direction = "download"
	assert.Equal(t, "receiver socket buffer (client)", lossBy(r))
	l.Lines[2].Count = n64(500)
	assert.Equal(t, "sender NIC allowance", lossBy(r))
	l.Lines[0].Count = n64(600)
	assert.Equal(t, "path", lossBy(r))
	assert.Equal(t, "path 60, receiver_socket 8, sender_allowance 50", lossWhere(l))
	r.Ledger = nil
	assert.Equal(t, "loss", lossBy(r), "a row without a ledger (an older peer) keeps the old verdict")
	assert.Empty(t, lossWhere(nil))
}
