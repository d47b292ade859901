package throughput

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLedgerOwnPairLoopback: between two netperfkit ends every direction's
// ledger balances exactly (offered = every line + received), the socket
// line is known on linux, and the text form names the lines.
func TestLedgerOwnPairLoopback(t *testing.T) {
	addr, results := startServer(t, nil)
	for _, tc := range []struct {
		name          string
		reverse, bidi bool
		v6            bool
	}{{"forward", false, false, false}, {"reverse", true, false, false}, {"bidir", false, true, false}, {"ipv6", false, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, results := addr, results
			if tc.v6 {
				if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
					t.Skipf("no IPv6 loopback: %v", err)
				} else {
					_ = ln.Close()
				}
				addr, results = startServerAt(t, "[::1]:0", nil)
			}
			res, err := Run(context.Background(), addr, &Config{UDP: true, Bitrate: 20e6, BlockLen: 1200,
				Duration: 300 * time.Millisecond, Reverse: tc.reverse, Bidir: tc.bidi})
			require.NoError(t, err)
			var srv *Result
			select {
			case srv = <-results:
			case <-time.After(10 * time.Second):
				t.Fatal("no server result")
			}
			// The server balances the same directions from its side.
			for _, sum := range []*Summary{srv.Upload, srv.Download} {
				if sum != nil {
					assert.True(t, sum.Ledger.Exact(), "server's: %s", sum.Ledger)
				}
			}
			for _, sum := range []*Summary{res.Upload, res.Download} {
				if sum == nil {
					continue
				}
				l := sum.Ledger
				require.NotNil(t, l)
				t.Logf("%s", l)
				assert.True(t, l.Exact(), "%s", l)
				assert.Equal(t, sum.Sent.Packets+sum.Sent.LocalDrops, l.Offered)
				sock, ok := l.Line(LineReceiverSocket)
				require.True(t, ok)
				if ledgerAvailable {
					require.NotNil(t, sock.Count, "%+v", sock)
					backlog, _ := l.Line(LineReceiverBacklog)
					assert.NotNil(t, backlog.Count, "%+v", backlog)
					nic, _ := l.Line(LineReceiverNIC)
					assert.Contains(t, nic.Source, "lo: ")
				}
			}
		})
	}
}
