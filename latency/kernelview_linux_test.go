//go:build linux

package latency

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A ping-pong run's kernel view: a stamp pair per measured message, each
// at its round trip's index, positive and inside the application's view
// of the same message (the kernel stamps the request after our send call
// began and the reply before our read returned). The wall clock of the
// stamps and the monotonic clock of the round trips may differ by a few
// microseconds, hence the slack.
func TestPingPongKernelView(t *testing.T) {
	const slack = 20 * time.Microsecond
	for _, network := range []string{"udp", "tcp"} {
		for _, mode := range []time.Duration{0, time.Millisecond} {
			t.Run(network+"/"+modeName(mode), func(t *testing.T) {
				addr, _ := startServer(t, network, nil)
				res, err := PingPong(context.Background(), addr, &PingPongConfig{
					Network: network, Count: 300, MessageSize: 100, Spin: mode, ReadTimeout: 10 * time.Second, KernelStamps: true,
				})
				require.NoError(t, err)
				require.NotNil(t, res.KernelRTT, "no kernel view: %s", res.NoKernelStamps)
				assert.Empty(t, res.NoKernelStamps)
				require.Len(t, res.KernelSamples, len(res.Samples))
				var with int64
				for i, k := range res.KernelSamples {
					if k < 0 {
						continue
					}
					with++
					assert.Positive(t, k, "message %d", i)
					assert.LessOrEqual(t, k, res.Samples[i]+slack, "message %d: kernel view above the application's", i)
				}
				assert.Equal(t, with, res.KernelRTT.Observations)
				assert.Equal(t, int64(300), with+res.KernelStampsLost, "every measured message has a view or a lost stamp")
				if network == "udp" {
					// Loopback UDP always has both stamps (TCP may miss a
					// receive stamp on a loaded machine, see
					// TestPingPongLoopback).
					assert.Zero(t, res.KernelStampsLost)
				}
				assert.LessOrEqual(t, res.KernelRTT.P50, res.P50+slack)

				b, err := json.Marshal(res)
				require.NoError(t, err)
				var back PingPongResult
				require.NoError(t, json.Unmarshal(b, &back))
				require.NotNil(t, back.KernelRTT)
				assert.Equal(t, res.KernelRTT.Observations, back.KernelRTT.Observations)
				assert.Contains(t, string(b), `"kernel_rtt":{`)
			})
		}
	}
}

// Where there are no stamps the result says why, and has no kernel view
// at all rather than zeros.
func TestPingPongNoKernelStampsSaysWhy(t *testing.T) {
	addr, _ := startServer(t, "udp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{MPS: 1000, Duration: 300 * time.Millisecond, WarmUp: -1, CoolDown: -1, KernelStamps: true})
	require.NoError(t, err)
	assert.Nil(t, res.KernelRTT)
	assert.Nil(t, res.KernelSamples)
	assert.Contains(t, res.NoKernelStamps, "under-load")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "kernel_rtt")
	assert.Contains(t, string(b), `"no_kernel_stamps":"under-load`)

	res, err = PingPong(context.Background(), "127.0.0.1:1", &PingPongConfig{Network: "tcp", Count: 1, KernelStamps: true})
	require.Error(t, err)
	assert.Nil(t, res.KernelRTT)
	assert.NotEmpty(t, res.NoKernelStamps)

	// Off unless asked for.
	res, err = PingPong(context.Background(), addr, &PingPongConfig{Count: 10})
	require.NoError(t, err)
	assert.Nil(t, res.KernelRTT)
	assert.Contains(t, res.NoKernelStamps, "not asked for")
}

// DiscardSamples keeps the kernel view in its histogram only.
func TestPingPongKernelViewDiscardSamples(t *testing.T) {
	addr, _ := startServer(t, "udp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{Count: 100, DiscardSamples: true, ReadTimeout: 10 * time.Second, KernelStamps: true})
	require.NoError(t, err)
	require.NotNil(t, res.KernelRTT)
	assert.Nil(t, res.KernelSamples)
	assert.Equal(t, int64(100), res.KernelRTT.Observations+res.KernelStampsLost)
}
