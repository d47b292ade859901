package underload_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/throughputtest"
	"github.com/netperfkit/netperfkit/throughput/underload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunResponsiveness loads the path with TCP flows, upload and download,
// against our server and a stock 3.21 one, and checks that both kinds of
// probe are in the result and RPM follows the draft's weights: the loaded
// connections' own RTT samples come from the sender's TCP_INFO, the
// server's for -R.
func TestRunResponsiveness(t *testing.T) {
	echo := latencytest.NewServer(t, &latencytest.Config{Network: "tcp"})
	ours := throughputtest.NewServer(t, nil).Addr
	// A stock server reports its senders' RTT to the client only in JSON,
	// which it writes when started with -J.
	servers := map[string]func(t *testing.T) string{
		"netperfkit":   func(*testing.T) string { return ours },
		"iperf3.21 -J": func(t *testing.T) string { return startIperf3ServerBin(t, peertest.NewIPerf3(t), "-J") },
	}
	for name, server := range servers {
		for _, reverse := range []bool{false, true} {
			t.Run(name+map[bool]string{false: " upload", true: " download"}[reverse], func(t *testing.T) {
				if runtime.GOOS != "linux" {
					t.Skip("TCP_INFO is not available on this platform")
				}
				addr := server(t)
				res, err := underload.Run(ctxT(t, 30*time.Second), addr, &underload.Config{
					Flows:          throughput.Config{Duration: 2 * time.Second, Streams: 2, Reverse: reverse},
					EchoAddr:       echo.Addr,
					Responsiveness: &responsiveness.Config{ProbeRate: 20},
				})
				require.NoError(t, err)
				require.NotNil(t, res.Flows)
				require.NotNil(t, res.Responsiveness)
				require.NotNil(t, res.LoadedFlows)
				assert.Nil(t, res.Latency, "the responsiveness probes replace the open-loop one")
				lf := *res.LoadedFlows
				t.Logf("loaded flows: %d samples, trimmed mean %.0f us; new connections: %d probes, phases %v; RPM %.0f",
					lf.Probes, float64(lf.TrimmedMean)/1e3, res.Responsiveness.NewConnection.Probes, res.Responsiveness.NewConnectionPhases, res.Responsiveness.RPM)
				// 2 streams x 20 intervals of 100 ms; a stock server
				// sending (-R) reports its own every second only.
				want := int64(10)
				if reverse && name != "netperfkit" {
					want = 2
				}
				assert.GreaterOrEqual(t, lf.Probes, want)
				assert.Positive(t, lf.TrimmedMean)
				assert.LessOrEqual(t, lf.TrimmedMean, lf.Latency.Max)
				assert.Positive(t, res.Responsiveness.NewConnection.Probes)
				conn, req := float64(res.Responsiveness.NewConnectionPhases["connect"])/1e3, float64(res.Responsiveness.NewConnectionPhases["request"])/1e3
				require.Positive(t, conn)
				require.Positive(t, req)
				assert.InEpsilon(t, 60e6/((conn+req)/4+float64(lf.TrimmedMean)/1e3/2), res.Responsiveness.RPM, 1e-3)
				assert.Positive(t, res.LoadedFlows.TrimmedMean, "RPM's self probes are the loaded flows")
			})
		}
	}
	t.Run("iperf3.21 text download", func(t *testing.T) {
		// Without -J the stock server's report has no RTT: RPM takes the
		// established connection's probes and says so.
		addr := startIperf3ServerBin(t, peertest.NewIPerf3(t))
		res, err := underload.Run(ctxT(t, 30*time.Second), addr, &underload.Config{
			Flows: throughput.Config{Duration: time.Second, Reverse: true}, EchoAddr: echo.Addr,
			Responsiveness: &responsiveness.Config{},
		})
		require.NoError(t, err)
		assert.Zero(t, res.LoadedFlows.Probes)
		est := float64(res.Responsiveness.Established.TrimmedMean) / 1e3
		conn, req := float64(res.Responsiveness.NewConnectionPhases["connect"])/1e3, float64(res.Responsiveness.NewConnectionPhases["request"])/1e3
		assert.InEpsilon(t, 60e6/((conn+req)/4+est/2), res.Responsiveness.RPM, 1e-3, "RPM's self probes are the established connection's")
		assert.Positive(t, res.Responsiveness.RPM)
	})
	t.Run("no echo server", func(t *testing.T) {
		_, err := underload.Run(ctxT(t, 5*time.Second), ours, &underload.Config{Responsiveness: &responsiveness.Config{}})
		require.ErrorContains(t, err, "EchoAddr")
	})
}
