package underload_test

import (
	"context"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// The helpers live in internal/peertest; these names stay for this
// package's tests.

func ctxT(t testing.TB, d time.Duration) context.Context { return peertest.Context(t, d) }

func startIperf3ServerBin(t testing.TB, bin string, extra ...string) string {
	t.Helper()
	return peertest.IPerf3Server(t, bin, "127.0.0.1", extra...)
}
