package throughput

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkTCPResult asserts what both ends reported for a TCP test.
func checkTCPResult(t *testing.T, res *Result, up, down int) {
	t.Helper()
	check := func(name string, s *Summary, n int) {
		if n == 0 {
			assert.Nil(t, s, name)
			return
		}
		require.NotNil(t, s, name)
		assert.Equal(t, n, s.Streams, name)
		if res.Config.Bytes > 0 || res.Config.Blocks > 0 {
			// A test that ends on a count moves data however slowly; how
			// much a timed one moves is the machine's business (a loaded
			// one can hold loopback data back for a whole second).
			assert.Greater(t, s.Sent.Bytes, int64(0), name)
			assert.Greater(t, s.Received.Bytes, int64(0), name)
		}
		// The receiver never counts more than the sender wrote. With an
		// omit period the two ends cut it at their own moments, which a
		// loaded machine may set far apart: the receiver may count what the
		// sender omitted, but no more than the sender wrote in all.
		if res.Config.Omit == 0 {
			assert.LessOrEqual(t, s.Received.Bytes, s.Sent.Bytes, name)
		} else {
			assert.LessOrEqual(t, s.Received.Bytes, s.Sent.Bytes+intervalBytes(res, name == "download", true), name)
		}
		assert.Equal(t, bps(s.Received.Bytes, s.Duration.Seconds()), s.Received.BitsPerSecond, name)
	}
	check("upload", res.Upload, up)
	check("download", res.Download, down)
	assert.Len(t, res.Streams, up+down)
	ids := []int{}
	for _, s := range res.Streams {
		ids = append(ids, s.ID)
	}
	want := []int{1}
	for i := 1; i < up+down; i++ {
		want = append(want, i+2)
	}
	assert.Equal(t, want, ids, "iperf3 stream ids skip 2")
	assert.Greater(t, res.CPU.HostTotal, 0.0)
	assert.Greater(t, res.CPU.RemoteTotal, 0.0)
}

// intervalBytes adds up one direction's bytes over the intervals inside
// (omitted true) or after the omit period.
func intervalBytes(res *Result, download, omitted bool) int64 {
	var n int64
	for _, iv := range res.Intervals {
		c := iv.Upload
		if download {
			c = iv.Download
		}
		if iv.Omitted == omitted && c != nil {
			n += c.Bytes
		}
	}
	return n
}

// checkRate asserts what holds for a paced direction on any machine, loaded
// or not: the SenderLimited verdict matches the figures, and when our own
// pacer sent (ownSender), it never ran ahead of the target over the test's
// wall time (a loaded machine can only make a sender fall behind).
func checkRate(t *testing.T, res *Result, s *Summary, wall time.Duration, ownSender bool) {
	t.Helper()
	target := res.Config.Bitrate * float64(s.Streams)
	assert.Equal(t, s.Sent.BitsPerSecond < 0.95*target, s.SenderLimited,
		"the verdict matches the figures: sent %.0f of %.0f bit/s", s.Sent.BitsPerSecond, target)
	if ownSender {
		// The pacer lets a sender be one block and 500 us ahead at most.
		ahead := float64(8*res.Config.BlockLen*s.Streams) + target*500e-6
		assert.LessOrEqual(t, float64(8*s.Sent.Bytes), target*wall.Seconds()+ahead, "the pacer never runs ahead")
	}
}

// runTimed is runRetry that also returns its wall time, which bounds the
// sending time of the run that produced the result.
func runTimed(t *testing.T, addr string, cfg *Config) (*Result, time.Duration, error) {
	t.Helper()
	t0 := time.Now()
	res, err := runRetry(t, addr, cfg)
	return res, time.Since(t0), err
}

func TestClientAgainstIperf3(t *testing.T) {
	addr := startIperf3Server(t)
	sec := time.Second
	cases := []struct {
		name     string
		cfg      Config
		up, down int
	}{
		{"tcp", Config{Duration: sec}, 1, 0},
		{"tcp-P4", Config{Duration: sec, Streams: 4}, 4, 0},
		{"reverse", Config{Duration: sec, Reverse: true}, 0, 1},
		{"reverse-P2", Config{Duration: sec, Reverse: true, Streams: 2}, 0, 2},
		{"bidir", Config{Duration: sec, Bidir: true}, 1, 1},
		{"bidir-P2", Config{Duration: sec, Bidir: true, Streams: 2}, 2, 2},
		{"bytes", Config{Bytes: 50 << 20}, 1, 0},
		{"blocks", Config{Blocks: 100, BlockLen: 64 << 10}, 1, 0},
		// Streams whose writes block when the first of them runs out of
		// bytes to send still write every byte reserved.
		{"bytes-P4", Config{Bytes: 50 << 20, Streams: 4}, 4, 0},
		{"blocks-P4", Config{Blocks: 400, BlockLen: 64 << 10, Streams: 4}, 4, 0},
		{"len-window", Config{Duration: sec, BlockLen: 16 << 10, SocketOptions: SocketOptions{Window: 256 << 10}}, 1, 0},
		{"omit", Config{Duration: sec, Omit: sec}, 1, 0},
		{"rate", Config{Duration: sec, Bitrate: 100e6, BlockLen: 128 << 10}, 1, 0},
		// The same on stream threads (Config.StreamThreads).
		{"threads-tcp-P4", Config{Duration: sec, Streams: 4, SocketOptions: SocketOptions{StreamThreads: true}}, 4, 0},
		{"threads-bidir-P2", Config{Duration: sec, Bidir: true, Streams: 2, SocketOptions: SocketOptions{StreamThreads: true}}, 2, 2},
		{"threads-bytes", Config{Bytes: 50 << 20, SocketOptions: SocketOptions{StreamThreads: true}}, 1, 0},
		{"threads-blocks", Config{Blocks: 100, BlockLen: 64 << 10, SocketOptions: SocketOptions{StreamThreads: true}}, 1, 0},
		{"threads-rate", Config{Duration: sec, Bitrate: 100e6, BlockLen: 128 << 10, SocketOptions: SocketOptions{StreamThreads: true}}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Interval = 500 * time.Millisecond
			res, wall, err := runTimed(t, addr, &cfg)
			require.NoError(t, err)
			checkTCPResult(t, res, tc.up, tc.down)
			switch strings.TrimPrefix(tc.name, "threads-") {
			case "bytes", "bytes-P4":
				// As iperf3's -n: every stream writes whole blocks, and
				// the last one written reaches the count.
				assert.GreaterOrEqual(t, res.Upload.Sent.Bytes, int64(50<<20))
				assert.Less(t, res.Upload.Sent.Bytes, int64(50<<20)+int64(iperfTCPBlockLen))
				assert.Zero(t, res.Upload.Sent.Bytes%int64(iperfTCPBlockLen), "a block cut short")
			case "blocks", "blocks-P4":
				assert.Equal(t, int64(cfg.Blocks*64<<10), res.Upload.Sent.Bytes)
			case "omit":
				require.NotEmpty(t, res.Intervals)
				assert.True(t, res.Intervals[0].Omitted)
				assert.False(t, res.Intervals[len(res.Intervals)-1].Omitted)
				assert.GreaterOrEqual(t, res.Upload.Duration, time.Second, "the counted time follows the omit period")
				// Our own counters leave out exactly the omitted intervals.
				assert.Equal(t, res.Upload.Sent.Bytes, intervalBytes(res, false, false))
			case "rate":
				checkRate(t, res, res.Upload, wall, true)
			case "len-window":
				assert.Equal(t, 16<<10, res.Config.BlockLen)
			case "reverse", "reverse-P2":
				// Retransmits come from the server's results in reverse mode.
				assert.GreaterOrEqual(t, res.Download.Sent.Retransmits, int64(0))
			}
		})
	}
}

func TestClientGetServerOutputIperf3(t *testing.T) {
	addr := startIperf3Server(t)
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: time.Second, GetServerOutput: true})
	require.NoError(t, err)
	t.Logf("json %d bytes, text %q", len(res.ServerOutputJSON), res.ServerOutputText)
	require.True(t, len(res.ServerOutputJSON) > 0 || res.ServerOutputText != "")
	if len(res.ServerOutputJSON) > 0 {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(res.ServerOutputJSON, &doc))
		assert.Contains(t, doc, "intervals")
	}
}

func TestClientUDPAgainstIperf3(t *testing.T) {
	addr := startIperf3Server(t)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"udp-10M", Config{UDP: true, Bitrate: 10e6, BlockLen: 1200}},
		{"udp-32bit", Config{UDP: true, Bitrate: 5e6, UDP32BitCounters: true}},
		{"udp-reverse", Config{UDP: true, Bitrate: 10e6, Reverse: true}},
		{"udp-bidir-P2", Config{UDP: true, Bitrate: 5e6, Bidir: true, Streams: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Duration = time.Second
			res, wall, err := runTimed(t, addr, &cfg)
			require.NoError(t, err)
			for _, s := range []*Summary{res.Upload, res.Download} {
				if s == nil {
					continue
				}
				t.Logf("%+v", *s)
				assert.Greater(t, s.Sent.Packets, int64(0))
				assert.Greater(t, s.Received.Packets, int64(0))
				assert.LessOrEqual(t, s.Received.LostPackets, s.Received.Packets)
				checkRate(t, res, s, wall, s == res.Upload)
				// The receiver's expected count (highest sequence number)
				// never exceeds what was sent. It may fall short by any
				// number: datagrams still queued at the receiver when its end
				// of the test comes are not counted, and a starved receiver
				// on a loaded machine has many queued.
				assert.LessOrEqual(t, s.Received.Packets, s.Sent.Packets)
			}
		})
	}
}

// TestLastIntervalReachesTheEnd: the interval that reaches a timed test's
// end is cut once the senders have stopped, so the blocks written between
// the end's tick and the stop do not make a "1.00-1.00 sec" interval of
// their own (iperf3 3.21 cuts it in the same timer pass that ends the
// test). Only an end that comes a tenth of an interval late may leave one.
func TestLastIntervalReachesTheEnd(t *testing.T) {
	addr, results := startServer(t, &ServerConfig{Interval: 500 * time.Millisecond})
	for _, cfg := range []Config{
		{Duration: time.Second, Bitrate: 200e6},
		{Duration: time.Second, Bitrate: 200e6, Reverse: true},
		{Duration: time.Second, UDP: true, Bitrate: 50e6},
	} {
		cfg.Interval = 500 * time.Millisecond
		res, err := runRetry(t, addr, &cfg)
		require.NoError(t, err)
		srv := <-results
		for _, r := range []*Result{res, srv} {
			require.NotEmpty(t, r.Intervals, "%s %+v", r.Role, cfg)
			for _, iv := range r.Intervals {
				assert.False(t, iv.Start >= time.Second && iv.Start < time.Second+cfg.Interval/10,
					"%s %+v: an interval starts at the end: %v-%v", r.Role, cfg, iv.Start, iv.End)
			}
			last := r.Intervals[len(r.Intervals)-1]
			assert.GreaterOrEqual(t, last.End, time.Second-cfg.Interval/10, "%s: the intervals reach the end", r.Role)
		}
	}
}
