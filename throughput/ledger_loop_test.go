package throughput

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLedgerOwnPairLoopback: between two netperfkit ends every direction's
// ledger balances exactly (offered = every line + received), the socket
// line is known on linux, and the text form names the lines.
func TestLedgerOwnPairLoopback(t *testing.T) {
	addr, _ := startServer(t, nil)
	for _, tc := range []struct {
		name          string
		reverse, bidi bool
	}{{"forward", false, false}, {"reverse", true, false}, {"bidir", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), addr, &Config{UDP: true, Bitrate: 20e6, BlockLen: 1200,
				Duration: 300 * time.Millisecond, Reverse: tc.reverse, Bidir: tc.bidi})
			require.NoError(t, err)
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
				}
			}
		})
	}
}
