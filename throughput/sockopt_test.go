package throughput

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSocketOptions sets MSS, TCP_NODELAY, a congestion algorithm and a
// window; on linux the algorithm is reported by both ends.
func TestSocketOptions(t *testing.T) {
	addr, results := startServer(t, nil)
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{
		Duration:      300 * time.Millisecond,
		Interval:      -1,
		SocketOptions: SocketOptions{MSS: 1200, NoDelay: true, Congestion: "reno", Window: 512 << 10},
	})
	if runtime.GOOS != "linux" {
		require.NoError(t, err)
		assert.Contains(t, res.Notes, "congestion: not available on this platform")
		return
	}
	require.NoError(t, err)
	srv := <-results
	assert.Equal(t, "reno", res.Congestion)
	assert.Equal(t, "reno", res.RemoteCongestion, "the server applies the client's algorithm")
	assert.Equal(t, "reno", srv.Congestion)
	assert.Equal(t, 512<<10, srv.Config.Window)
	assert.GreaterOrEqual(t, res.SndBufActual, 512<<10)
	// An unknown algorithm is an error on linux, before any data flows.
	_, err = Run(ctxT(t, 10*time.Second), addr, &Config{Duration: 300 * time.Millisecond, SocketOptions: SocketOptions{Congestion: "no-such-cc"}})
	assert.Error(t, err)
}
