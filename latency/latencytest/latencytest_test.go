package latencytest_test

import (
	"context"
	"testing"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewServerBoth(t *testing.T) {
	s := latencytest.NewServer(t, nil)
	require.NotEmpty(t, s.UDPAddr)
	require.NotEmpty(t, s.TCPAddr)
	for network, addr := range map[string]string{"udp": s.UDPAddr, "tcp": s.TCPAddr} {
		res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{Network: network, Count: 20})
		require.NoError(t, err)
		assert.Equal(t, int64(20), res.Observations)
	}
	assert.Equal(t, int64(40), s.Server.Stats().Replies)
	s.Close()
	s.Close()
}

func TestNewServerTCPOnly(t *testing.T) {
	s := latencytest.NewServer(t, &latencytest.Config{Network: "tcp", Server: &latency.ServerConfig{MaxConns: 1}})
	assert.Empty(t, s.UDPAddr)
	res, err := latency.PingPong(context.Background(), s.TCPAddr, &latency.PingPongConfig{Network: "tcp", Count: 5})
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.Observations)
}

func BenchmarkLoopbackUDP(b *testing.B) {
	s := latencytest.NewServer(b, &latencytest.Config{Network: "udp"})
	latencytest.Benchmark(b, s.UDPAddr, nil)
}

func BenchmarkLoopbackTCP(b *testing.B) {
	s := latencytest.NewServer(b, &latencytest.Config{Network: "tcp"})
	latencytest.Benchmark(b, s.TCPAddr, &latency.PingPongConfig{Network: "tcp"})
}
