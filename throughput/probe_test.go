package throughput

import (
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatencyUnderLoad measures RTT to an echo server while TCP flows run.
func TestLatencyUnderLoad(t *testing.T) {
	addr, _ := startServer(t, nil)
	echo := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: time.Second, Streams: 2,
		Latency: &LatencyProbe{Addr: echo.Addr}})
	require.NoError(t, err)
	require.NotNil(t, res.Latency, "notes: %v", res.Notes)
	assert.Greater(t, res.Latency.Observations, int64(10))
	assert.Positive(t, res.Latency.P50)
	assert.GreaterOrEqual(t, res.Latency.P99, res.Latency.P50)
	assert.Greater(t, res.Upload.Received.Bytes, int64(0))

	// A probe that cannot reach its server never fails the throughput test.
	res, err = Run(ctxT(t, 30*time.Second), addr, &Config{Duration: 300 * time.Millisecond,
		Latency: &LatencyProbe{Addr: "127.0.0.1:1", Config: &latency.PingPongConfig{Network: "tcp"}}})
	require.NoError(t, err)
	assert.Nil(t, res.Latency)
	assert.NotEmpty(t, res.Notes)
}
