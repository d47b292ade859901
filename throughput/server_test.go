package throughput

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer runs Serve on a loopback port until the test ends and
// checks that Serve returns.
func startServer(t testing.TB, cfg *ServerConfig) (addr string, results <-chan *Result) {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0", cfg)
}

// startServerAt is startServer listening on laddr ("[::1]:0" for IPv6).
func startServerAt(t testing.TB, laddr string, cfg *ServerConfig) (addr string, results <-chan *Result) {
	t.Helper()
	ln, err := net.Listen("tcp", laddr)
	require.NoError(t, err)
	ch := make(chan *Result, 64)
	c := ServerConfig{}
	if cfg != nil {
		c = *cfg
	}
	c.OnResult = func(r Result) { ch <- &r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv, err := NewServer(&c)
	require.NoError(t, err)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(15 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	})
	return ln.Addr().String(), ch
}

type iperfSum struct {
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits"`
	Packets       int64   `json:"packets"`
	LostPackets   int64   `json:"lost_packets"`
	JitterMs      float64 `json:"jitter_ms"`
}

type iperfEnd struct {
	End struct {
		SumSent                 *iperfSum        `json:"sum_sent"`
		SumReceived             *iperfSum        `json:"sum_received"`
		SumSentBidirReverse     *json.RawMessage `json:"sum_sent_bidir_reverse"`
		SumReceivedBidirReverse *json.RawMessage `json:"sum_received_bidir_reverse"`
		Sum                     *struct {
			Bytes       int64   `json:"bytes"`
			Packets     int64   `json:"packets"`
			LostPackets int64   `json:"lost_packets"`
			LostPercent float64 `json:"lost_percent"`
			JitterMs    float64 `json:"jitter_ms"`
		} `json:"sum"`
		CPU CPUUtilization `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// runIperf3Client runs a stock iperf3 client with -J against addr.
func runIperf3Client(t *testing.T, addr string, args ...string) (*iperfEnd, string) {
	t.Helper()
	return runIperf3ClientBin(t, peertest.Binary(t, "apt-get install iperf3", "iperf3"), addr, args...)
}

func runIperf3ClientBin(t *testing.T, bin, addr string, args ...string) (*iperfEnd, string) {
	t.Helper()
	h, p, _ := net.SplitHostPort(addr)
	all := append([]string{"-c", h, "-p", p, "-J"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, all...).Output()
	var doc iperfEnd
	require.NoError(t, json.Unmarshal(out, &doc), string(out))
	require.NoError(t, err, "iperf3 %v: %s", all, doc.Error)
	require.Empty(t, doc.Error)
	return &doc, string(out)
}

// TestServerWithIperf3Client runs a stock client against our server, its
// streams on the poller and on stream threads (ServerConfig.StreamThreads).
func TestServerWithIperf3Client(t *testing.T) {
	for _, threads := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "threads"}[threads], func(t *testing.T) {
			testServerWithIperf3Client(t, &ServerConfig{SocketOptions: SocketOptions{StreamThreads: threads}})
		})
	}
}

func testServerWithIperf3Client(t *testing.T, sc *ServerConfig) {
	addr, results := startServer(t, sc)
	cases := []struct {
		name     string
		args     []string
		up, down int
	}{
		{"tcp", []string{"-t", "1"}, 1, 0},
		{"tcp-P4", []string{"-t", "1", "-P", "4"}, 4, 0},
		{"reverse", []string{"-t", "1", "-R"}, 0, 1},
		{"bidir-P2", []string{"-t", "1", "--bidir", "-P", "2"}, 2, 2},
		{"bytes", []string{"-n", "20M"}, 1, 0},
		{"blocks", []string{"-k", "50", "-l", "64K"}, 1, 0},
		{"len-window-omit", []string{"-t", "1", "-l", "16K", "-w", "256K", "-O", "1"}, 1, 0},
		{"server-output", []string{"-t", "1", "--get-server-output"}, 1, 0},
		{"tcp-rate", []string{"-t", "1", "-b", "200M"}, 1, 0},
		{"udp-P2", []string{"-t", "1", "-u", "-b", "5M", "-P", "2"}, 2, 0},
		{"udp", []string{"-t", "1", "-u", "-b", "10M", "-l", "1200"}, 1, 0},
		{"udp-reverse", []string{"-t", "1", "-u", "-b", "10M", "-R"}, 0, 1},
		{"udp-bidir-64", []string{"-t", "1", "-u", "-b", "5M", "--bidir", "--udp-counters-64bit"}, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, raw := runIperf3Client(t, addr, tc.args...)
			var srv *Result
			select {
			case srv = <-results:
			case <-time.After(10 * time.Second):
				t.Fatal("server reported no result")
			}
			e := doc.End
			if strings.HasPrefix(tc.name, "udp") {
				require.NotNil(t, e.Sum, raw)
				assert.Greater(t, e.Sum.Packets, int64(0))
				assert.LessOrEqual(t, e.Sum.LostPackets, e.Sum.Packets/10)
				assert.True(t, srv.Config.UDP)
			} else {
				require.NotNil(t, e.SumSent, raw)
				require.NotNil(t, e.SumReceived, raw)
				assert.Greater(t, e.SumReceived.Bytes, int64(0))
				assert.False(t, srv.Config.UDP)
			}
			assert.Equal(t, tc.down > 0 && tc.up > 0, e.SumSentBidirReverse != nil || (strings.HasPrefix(tc.name, "udp") && tc.up > 0 && tc.down > 0))
			// Both sides agree on what the receiver counted.
			if tc.up > 0 {
				require.NotNil(t, srv.Upload)
				assert.Equal(t, tc.up, srv.Upload.Streams)
				if e.SumReceived != nil && tc.down == 0 {
					assert.Equal(t, e.SumReceived.Bytes, srv.Upload.Received.Bytes)
					assert.Equal(t, e.SumSent.Bytes, srv.Upload.Sent.Bytes)
				}
			}
			if tc.down > 0 {
				require.NotNil(t, srv.Download)
				assert.Equal(t, tc.down, srv.Download.Streams)
				assert.Greater(t, srv.Download.Sent.Bytes, int64(0))
				if e.SumSent != nil && tc.up == 0 {
					assert.Equal(t, e.SumSent.Bytes, srv.Download.Sent.Bytes)
					assert.Equal(t, e.SumReceived.Bytes, srv.Download.Received.Bytes)
				}
			}
			assert.Greater(t, e.CPU.RemoteTotal, 0.0, "our server's CPU use reaches iperf3")
			switch tc.name {
			case "bytes":
				assert.Equal(t, int64(20<<20), srv.Upload.Received.Bytes)
			case "blocks":
				assert.Equal(t, int64(50*64<<10), srv.Upload.Received.Bytes)
			case "len-window-omit":
				assert.Equal(t, 16<<10, srv.Config.BlockLen)
				assert.Equal(t, 256<<10, srv.Config.Window)
				assert.Equal(t, time.Second, srv.Config.Omit)
			case "server-output":
				assert.Contains(t, raw, "server_output_text")
				assert.Contains(t, raw, "receiver")
			case "tcp-rate":
				// The client's pacer caps the rate on any machine; a loaded
				// one may fall short of it, which is not ours to judge.
				assert.LessOrEqual(t, srv.Upload.Received.BitsPerSecond, 1.2*200e6)
				assert.Positive(t, srv.Upload.Received.BitsPerSecond)
			case "udp-P2":
				assert.Equal(t, int64(0), srv.Upload.Received.OutOfOrder)
				assert.LessOrEqual(t, srv.Upload.Received.BitsPerSecond, 1.2*10e6)
				assert.Positive(t, srv.Upload.Received.BitsPerSecond)
			case "udp-bidir-64":
				assert.Equal(t, "3.12", srv.PeerVersion)
			}
		})
	}
}

func TestClientAgainstOwnServer(t *testing.T) {
	addr, results := startServer(t, nil)
	cases := []Config{
		{Duration: time.Second, Streams: 2},
		{Duration: time.Second, Reverse: true},
		{Duration: time.Second, Bidir: true},
		{UDP: true, Duration: time.Second, Bitrate: 20e6, Streams: 2},
		{UDP: true, Duration: time.Second, Bitrate: 20e6, Reverse: true},
		{Bytes: 10 << 20, Reverse: true},
	}
	for i, cfg := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			cfg.Interval = 250 * time.Millisecond
			t0 := time.Now()
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			wall := time.Since(t0)
			require.NoError(t, err)
			srv := <-results
			for _, pair := range [][2]*Summary{{res.Upload, srv.Upload}, {res.Download, srv.Download}} {
				if pair[0] == nil {
					assert.Nil(t, pair[1])
					continue
				}
				require.NotNil(t, pair[1])
				assert.Equal(t, pair[0].Sent.Bytes, pair[1].Sent.Bytes)
				assert.Equal(t, pair[0].Received.Bytes, pair[1].Received.Bytes)
				// How much a 1 s test moves is the machine's business (a
				// loaded one can hold loopback data back for all of it).
				assert.LessOrEqual(t, pair[0].Received.Bytes, pair[0].Sent.Bytes)
			}
			if cfg.Bytes > 0 {
				// A test that ends on a count moves it, however slowly.
				assert.GreaterOrEqual(t, res.Download.Received.Bytes, cfg.Bytes)
			}
			if cfg.UDP {
				s := res.Upload
				if cfg.Reverse {
					s = res.Download
				}
				checkRate(t, res, s, wall, true)
			}
			if !cfg.UDP && cfg.Reverse && tcpInfoAvailable && cfg.Duration > 0 {
				// The server's TCP_INFO reaches the client's intervals.
				require.NotEmpty(t, res.Intervals)
				for _, iv := range res.Intervals[:len(res.Intervals)-1] {
					require.NotNil(t, iv.Streams[0].TCP, "interval %+v", iv)
					assert.Greater(t, iv.Streams[0].TCP.RTT, time.Duration(0))
					assert.Greater(t, iv.Streams[0].TCP.SndCwndBytes, int64(0))
				}
				assert.GreaterOrEqual(t, res.Download.Sent.Retransmits, int64(0))
			}
		})
	}
}

// TestServerConcurrentTests runs several clients at once; iperf3 would deny all but one.
func TestServerConcurrentTests(t *testing.T) {
	addr, _ := startServer(t, &ServerConfig{MaxTests: 3})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Run(ctxT(t, 30*time.Second), addr, &Config{Duration: time.Second, Bitrate: 50e6, UDP: i == 2})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}

// TestIperf321BothRoles runs iperf3 3.21 against our server and our client
// against iperf3 3.21's server, TCP and UDP, both directions.
func TestIperf321BothRoles(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	addr, results := startServer(t, nil)
	threaded, threadedResults := startServer(t, &ServerConfig{SocketOptions: SocketOptions{StreamThreads: true}})
	for _, args := range [][]string{{"-t", "1"}, {"-t", "1", "-R", "-P", "2"}, {"-t", "1", "-u", "-b", "50M"}, {"-t", "1", "--bidir"},
		{"threads", "-t", "1", "-P", "4"}, {"threads", "-t", "1", "--bidir", "-P", "2"}, {"threads", "-t", "1", "-R", "-P", "4"},
		{"threads", "-t", "1", "-R", "-P", "2", "-Z"}} {
		addr, results := addr, results
		if args[0] == "threads" {
			addr, results, args = threaded, threadedResults, args[1:]
		}
		doc, _ := runIperf3ClientBin(t, bin, addr, args...)
		require.NotNil(t, doc.End.SumReceived, "%v", args)
		require.NotNil(t, doc.End.SumSent, "%v", args)
		var r *Result
		select {
		case r = <-results:
			assert.Equal(t, "server", r.Role)
			assert.Contains(t, r.PeerVersion, "3.21")
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no server result", args)
		}
		// How much a 1 s test moves is the machine's business (a loaded one
		// can hold loopback data back for most of it); what holds anywhere
		// is that iperf3 reports what our end counted. (3.21's client stops
		// counting before its last write, so our server, which counts what
		// arrives until the stream is idle, receives a little more than it
		// says it sent.)
		switch {
		case slices.Contains(args, "-u") || slices.Contains(args, "--bidir"):
		case r.Upload != nil:
			assert.Equal(t, doc.End.SumReceived.Bytes, r.Upload.Received.Bytes, "%v", args)
		case r.Download != nil:
			assert.Equal(t, doc.End.SumSent.Bytes, r.Download.Sent.Bytes, "%v", args)
		}
	}
	stock := startIperf3ServerBin(t, bin)
	for _, cfg := range []Config{{Duration: time.Second}, {Duration: time.Second, Reverse: true, Streams: 2},
		{Duration: time.Second, UDP: true, Bitrate: 50e6}, {Duration: time.Second, Bidir: true},
		{Duration: time.Second, Reverse: true, Streams: 4, SocketOptions: SocketOptions{StreamThreads: true}},
		{Duration: time.Second, Streams: 4, SocketOptions: SocketOptions{StreamThreads: true}}, {Duration: time.Second, Bidir: true, SocketOptions: SocketOptions{StreamThreads: true}},
		{Duration: time.Second, Streams: 2, SocketOptions: SocketOptions{ZeroCopy: true, StreamThreads: true}}} {
		res, err := runRetry(t, stock, &cfg)
		require.NoError(t, err, "%+v", cfg)
		// Our sender counts every byte it writes, so its peer never receives
		// more (iperf3 3.21's sender does not count its last writes, so in
		// the other direction we may).
		if s := res.Upload; s != nil {
			assert.LessOrEqual(t, s.Received.Bytes, s.Sent.Bytes, "%+v", cfg)
		}
	}
}
