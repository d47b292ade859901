package underload_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/throughputtest"
	"github.com/netperfkit/netperfkit/throughput/underload"
)

// TestRun measures RTT to an echo server while TCP flows run.
func TestRun(t *testing.T) {
	srv := throughputtest.NewServer(t, nil)
	echo := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	var starts int
	res, err := underload.Run(ctxT(t, 30*time.Second), srv.Addr, &underload.Config{
		Flows:    throughput.Config{Duration: time.Second, Streams: 2, OnEvent: func(e throughput.Event) { starts += map[bool]int{true: 1}[e.Kind == throughput.EventStart] }},
		EchoAddr: echo.Addr,
	})
	require.NoError(t, err)
	require.NotNil(t, res.Latency, "notes: %v", res.Flows.Notes)
	assert.Equal(t, 1, starts, "the caller's OnEvent still gets the events")
	// The probe ran beside the flows and measured what came back: how much
	// in a second is the machine's to say.
	assert.Positive(t, res.Latency.Observations)
	assert.LessOrEqual(t, res.Latency.Observations, res.Latency.Sent)
	assert.Positive(t, res.Latency.P50)
	assert.GreaterOrEqual(t, res.Latency.P99, res.Latency.P50)
	assert.Greater(t, res.Flows.Upload.Received.Bytes, int64(0))

	// A probe that cannot reach its server never fails the throughput test.
	res, err = underload.Run(ctxT(t, 30*time.Second), srv.Addr, &underload.Config{
		Flows:    throughput.Config{Duration: 300 * time.Millisecond},
		EchoAddr: "127.0.0.1:1", Probe: &latency.PingPongConfig{Network: "tcp"}})
	require.NoError(t, err)
	assert.Nil(t, res.Latency)
	require.NotEmpty(t, res.Flows.Notes)
	assert.Contains(t, res.Flows.Notes[len(res.Flows.Notes)-1], "latency probe: ")
}

// TestRunMisuse: a missing echo server or a negative rate is an error that
// names the field, before any connection.
func TestRunMisuse(t *testing.T) {
	for _, tc := range []struct {
		cfg  *underload.Config
		want string
	}{
		{nil, "Config.EchoAddr"},
		{&underload.Config{}, "Config.EchoAddr"},
	} {
		res, err := underload.Run(ctxT(t, time.Second), "127.0.0.1:1", tc.cfg)
		require.ErrorContains(t, err, tc.want)
		require.NotNil(t, res, "never nil (docs/conventions.md)")
		require.NotNil(t, res.Flows)
		assert.Zero(t, res.Flows.Total().Received.Bytes)
	}
	rr, err := underload.Run(ctxT(t, time.Second), "127.0.0.1:1", &underload.Config{Responsiveness: &responsiveness.Config{}})
	require.ErrorContains(t, err, "Config.EchoAddr")
	require.NotNil(t, rr, "never nil (docs/conventions.md)")
	require.NotNil(t, rr.Flows)
	assert.Nil(t, rr.Responsiveness)
}

// TestRunRefusedConnection: a server that is not there gives the error
// and a readable result, flows included.
func TestRunRefusedConnection(t *testing.T) {
	res, err := underload.Run(ctxT(t, 5*time.Second), "127.0.0.1:1", &underload.Config{EchoAddr: "127.0.0.1:1"})
	require.Error(t, err)
	require.NotNil(t, res)
	require.NotNil(t, res.Flows)
	assert.Equal(t, "client", res.Flows.Role)
	assert.Nil(t, res.Latency, "the flows never started, nor did the probe")
	rr, err := underload.Run(ctxT(t, 5*time.Second), "127.0.0.1:1",
		&underload.Config{EchoAddr: "127.0.0.1:1", Flows: throughput.Config{Duration: time.Second}, Responsiveness: &responsiveness.Config{}})
	require.Error(t, err)
	require.NotNil(t, rr)
	require.NotNil(t, rr.Flows)
	require.NotNil(t, rr.LoadedFlows)
	assert.Zero(t, rr.LoadedFlows.Probes)
}
