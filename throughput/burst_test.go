package throughput

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBurstParams(t *testing.T) {
	c := withDefaults((&Config{UDP: true, Bitrate: 1e8, BlockLen: 1400, Burst: 16}))
	require.NoError(t, validate(&c))
	b, err := json.Marshal(params(&c))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"burst":16`)
	p, err := iperfwire.DecodeParams(b)
	require.NoError(t, err)
	assert.Equal(t, 16, configFromParams(p, &ServerConfig{}).Burst)

	// Out of range from the command line or a client is refused or ignored.
	for _, n := range []int{-1, maxBurst + 1} {
		bad := c
		bad.Burst = n
		assert.ErrorContains(t, validate(&bad), "Config.Burst")
	}
	p.Burst = maxBurst + 1
	assert.Zero(t, configFromParams(p, &ServerConfig{}).Burst)
}

// TestUDPBurstShape runs a paced UDP sender with a burst of 20 at 8 Mbit/s
// into a plain socket: a burst every 20 ms, its datagrams back to back.
// Without Burst the same rate sends one datagram per millisecond. It reads
// a count of datagrams, not a time's worth (a loaded machine sends fewer
// in a given time), and a starved reader's socket may drop some: the
// counters must run on, gaps being those losses.
func TestUDPBurstShape(t *testing.T) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rx.Close()
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer tx.Close()

	cfg := withDefaults((&Config{UDP: true, Bitrate: 8e6, BlockLen: 1000, Burst: 20, SocketOptions: SocketOptions{DisableFastPath: true}}))
	e := newEngine(&cfg, false)
	e.streams = []*flowStream{{send: true, udp: true, conn: tx}}
	e.start()
	defer e.stop()

	var arrivals []time.Time
	var counts []uint64
	buf := make([]byte, 2048)
	_ = rx.SetReadDeadline(time.Now().Add(10 * time.Second)) // against a hang only
	for len(arrivals) < 200 {
		n, err := rx.Read(buf)
		require.NoError(t, err, "after %d datagrams", len(arrivals))
		h, err := iperfwire.ParseUDPHeader(buf[:n], true)
		require.NoError(t, err)
		arrivals = append(arrivals, time.Now())
		counts = append(counts, h.Count)
	}
	require.GreaterOrEqual(t, counts[0], uint64(1))
	for i := 1; i < len(counts); i++ {
		require.Greater(t, counts[i], counts[i-1], "datagram counters run on across bursts")
	}
	if lost := counts[len(counts)-1] - uint64(len(counts)); lost > 0 {
		t.Logf("the starved reader's socket dropped %d datagrams", lost)
	}
	// Group datagrams by gaps above 5 ms: bursts 20 ms apart. A thread
	// descheduled mid-burst splits one, one waking late merges two; the
	// mean stays near 20, where unburst pacing at 1 ms gives groups of 1
	// or, merged, one group for the whole run.
	groups := 1
	for i := 1; i < len(arrivals); i++ {
		if arrivals[i].Sub(arrivals[i-1]) > 5*time.Millisecond {
			groups++
		}
	}
	mean := float64(len(arrivals)) / float64(groups)
	t.Logf("%d datagrams in %d groups: %.1f per group", len(arrivals), groups, mean)
	assert.GreaterOrEqual(t, mean, 10.0)
	assert.Greater(t, groups, 3)
}

// slowSender is a Config whose sender writes one byte a second: the
// receiver goes idle between writes.
func slowSender(c Config) *Config {
	c.Bitrate, c.BlockLen, c.Duration = 8, 1, 20*time.Second
	return &c
}

func TestRecvTimeoutClient(t *testing.T) {
	ours, _ := startServer(t, nil)
	cases := map[string]func(t *testing.T) string{
		"netperfkit": func(*testing.T) string { return ours },
		"iperf3":     func(t *testing.T) string { return startIperf3Server(t) },
		"iperf3.21":  func(t *testing.T) string { return startIperf3ServerBin(t, peertest.NewIPerf3(t)) },
	}
	for name, server := range cases {
		t.Run(name, func(t *testing.T) {
			addr := server(t)
			start := time.Now()
			res, err := Run(ctxT(t, 30*time.Second), addr, slowSender(Config{Reverse: true, RecvTimeout: 300 * time.Millisecond}))
			require.ErrorIs(t, err, ErrRecvIdle)
			assert.Less(t, time.Since(start), 15*time.Second, "the idle receiver ended the test before its time")
			require.NotNil(t, res)
			assert.Equal(t, reasonTimeout, classify(err))
		})
	}
}

func TestRecvTimeoutServer(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{RecvTimeout: 300 * time.Millisecond})
	t.Run("netperfkit-client", func(t *testing.T) {
		_, err := Run(ctxT(t, 30*time.Second), addr, slowSender(Config{}))
		require.ErrorIs(t, err, ErrRecvIdle, "the server tells the client why, as 3.21's does")
		expectRecvIdle(t, srv, errs)
	})
	t.Run("iperf3-client", func(t *testing.T) {
		bin := peertest.Binary(t, "apt-get install iperf3", "iperf3")
		h, p, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, bin, "-c", h, "-p", p, "-b", "8", "-l", "1", "-t", "20").CombinedOutput()
		t.Logf("iperf3: %s", out)
		require.Error(t, err, "the stock client sees the server end the test")
		assert.Contains(t, string(out), "idle timeout for receiving data")
		assert.Less(t, time.Since(start), 15*time.Second)
		expectRecvIdle(t, srv, errs)
	})
}

// expectRecvIdle waits for the server's hook to report an idle receiver.
func expectRecvIdle(t *testing.T, srv *Server, errs <-chan *SessionError) {
	t.Helper()
	e := expectFailure(t, errs, func(e *SessionError) bool { return errors.Is(e.Err, ErrRecvIdle) })
	assert.Equal(t, reasonTimeout, e.Reason)
	assert.Positive(t, srv.Stats().Failed[reasonTimeout])
}
