package throughput

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// totalRateCases are a test that asks for more than the 50 Mbit/s limit
// of TestTotalRate* (refused at once) and one that asks for no rate
// (ended by the server's one-second window, long before its 20 s).
var totalRateCases = []struct {
	name string
	args []string
	cfg  Config
}{
	{"refused", []string{"-t", "1", "-b", "30M", "-P", "2"}, Config{Duration: time.Second, Bitrate: 30e6, Streams: 2}},
	{"window", []string{"-t", "20"}, Config{Duration: 20 * time.Second}},
}

// TestTotalRateOurClient321Server: our client against a 3.21 server with
// --server-bitrate-limit ends with an error that names the limit.
func TestTotalRateOurClient321Server(t *testing.T) {
	stock := startIperf3ServerBin(t, peertest.NewIPerf3(t), "--server-bitrate-limit", "50M/1")
	for _, c := range totalRateCases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := runRetry(t, stock, &c.cfg)
			require.ErrorIs(t, err, ErrTotalRate)
			assert.Contains(t, err.Error(), "total required bandwidth is larger than server limit")
			assert.Less(t, time.Since(start), 15*time.Second, "ended by the limit, not by the test's time")
		})
	}
}

// stockErrorLine is where a stock client says why it failed: 3.21's
// "iperf3: SERVER ERROR - " when it reads SERVER_ERROR (its errno is 0
// from both servers when the client sends), and its last line.
var stockErrorLine = regexp.MustCompile(`(?m)^iperf3: (error|SERVER ERROR) - .*$`)

// runStockClient runs a stock client in text mode and returns its exit
// status and its error lines (stockErrorLine).
func runStockClient(t *testing.T, bin, addr string, args ...string) (int, []string) {
	t.Helper()
	h, p, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-c", h, "-p", p}, args...)...).CombinedOutput()
	require.NoError(t, ctx.Err(), "%s", out)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return max(ee.ExitCode(), 0), stockErrorLine.FindAllString(string(out), -1)
}

// TestTotalRateStockClients: stock clients against our server with a total
// limit get what they get from a 3.21 server with the same limit: exit
// status 1 and 3.21's "total required bandwidth is larger than server
// limit". 3.12's client, when a running test is ended, may first fail to
// write to the stream the server closed (against 3.21 too): for it only
// the exit status is compared there.
func TestTotalRateStockClients(t *testing.T) {
	bin321 := peertest.NewIPerf3(t)
	clients := map[string]string{"3.21": bin321, "3.12": peertest.Binary(t, "apt-get install iperf3", "iperf3")}
	ours, _ := startServer(t, &ServerConfig{MaxTotalBitrate: 50e6, TotalBitrateWindow: time.Second})
	for name, bin := range clients {
		for _, c := range totalRateCases {
			t.Run(name+" "+c.name, func(t *testing.T) {
				stock := startIperf3ServerBin(t, bin321, "--server-bitrate-limit", "50M/1")
				wantCode, want := runStockClient(t, bin, stock, c.args...)
				start := time.Now()
				code, got := runStockClient(t, bin, ours, c.args...)
				assert.Less(t, time.Since(start), 15*time.Second, "ended by the limit, not by the test's time")
				assert.Equal(t, 1, wantCode, "3.21's server: %v", want)
				assert.Equal(t, wantCode, code, "%v", got)
				if name == "3.12" && c.name == "window" {
					return
				}
				// A 3.21 client may end on a stream write that failed while
				// it read SERVER_ERROR (its threads share the error code):
				// seen against 3.21's server, which closes the streams at
				// once; ours waits for the client to leave.
				if n := len(want); n > 1 && want[n-1] == "iperf3: error - unable to write to stream socket: " {
					want[n-1] = "iperf3: error - total required bandwidth is larger than server limit"
				}
				assert.Contains(t, want, "iperf3: error - total required bandwidth is larger than server limit")
				assert.Equal(t, want, got)
			})
		}
	}
}
