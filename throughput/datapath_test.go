package throughput

import (
	"cmp"
	"encoding/json"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDataPathParams checks that the data-path options travel from a
// client's Config to the server's in 3.21's keys, and that a client that
// sends none of them (3.12) leaves the offloads to the server.
func TestDataPathParams(t *testing.T) {
	c := withDefaults((&Config{UDP: true, Bitrate: 1e9, BlockLen: 1400, SocketOptions: SocketOptions{GSO: offloadOn, GRO: offloadOn, SkipRxCopy: true, ZeroCopy: true, FQRate: 2e9}}))
	b, err := json.Marshal(params(&c))
	require.NoError(t, err)
	for _, k := range []string{`"gso":1`, `"gro":1`, `"gso_dg_size":1400`, `"skip_rx_copy":1`, `"zerocopy":1`, `"fqrate":2000000000`} {
		assert.Contains(t, string(b), k)
	}
	p, err := iperfwire.DecodeParams(b)
	require.NoError(t, err)
	got := configFromParams(p, &ServerConfig{})
	assert.Equal(t, offloadOn, got.GSO)
	assert.Equal(t, offloadOn, got.GRO)
	assert.True(t, got.SkipRxCopy)
	assert.True(t, got.ZeroCopy)
	assert.Equal(t, 2e9, got.FQRate)
	assert.True(t, useGRO(&got))

	// Defaults ask for nothing, as a 3.21 client without --gsro: the
	// server decides (GRO only without a rate), and a 3.21 server is not
	// pushed into GSO batches it cannot send.
	for _, rate := range []float64{1e9, Unlimited} {
		def := withDefaults((&Config{UDP: true, Bitrate: rate}))
		b, _ = json.Marshal(params(&def))
		assert.Contains(t, string(b), `"gro":0`)
		assert.Contains(t, string(b), `"gso":0`)
		assert.NotContains(t, string(b), `"gso_dg_size"`)
		p, _ = iperfwire.DecodeParams(b)
		srv := configFromParams(p, &ServerConfig{})
		assert.Equal(t, offloadAuto, srv.GSO)
		assert.Equal(t, offloadAuto, srv.GRO)
		assert.Equal(t, rate == Unlimited, useGRO(&srv))
		assert.True(t, useGSO(&srv))
	}
	// Switched on with small datagrams, the batch a 3.21 server is told to
	// send stays within the kernel's 64 segments (65507 bytes of 100-byte
	// datagrams would be 655).
	small := withDefaults((&Config{UDP: true, Bitrate: 1e6, BlockLen: 100, SocketOptions: SocketOptions{GSO: offloadOn}}))
	assert.Equal(t, iperfwire.Int(64*100), params(&small).GSOBfSize)
	assert.Equal(t, iperfwire.Int(100), params(&small).GSODgSize)
	big := withDefaults((&Config{UDP: true, Bitrate: 1e6, BlockLen: 1400, SocketOptions: SocketOptions{GSO: offloadOn}}))
	assert.Equal(t, iperfwire.Int(46*1400), params(&big).GSOBfSize)
	tcp := withDefaults((&Config{}))
	b, _ = json.Marshal(params(&tcp))
	assert.NotContains(t, string(b), `"gso"`, "3.21 sends gso and gro with UDP tests only")

	// 3.12 sends neither: the server decides, GRO only without a rate.
	p, _ = iperfwire.DecodeParams([]byte(`{"udp":true,"parallel":1,"len":1400,"bandwidth":1000000000}`))
	old := configFromParams(p, &ServerConfig{})
	assert.Equal(t, offloadAuto, old.GRO)
	assert.False(t, useGRO(&old))
	assert.True(t, useGSO(&old))
	p, _ = iperfwire.DecodeParams([]byte(`{"udp":true,"parallel":1,"len":1400,"bandwidth":0}`))
	srvUnl := configFromParams(p, &ServerConfig{})
	assert.True(t, useGRO(&srvUnl))
	// The server's own switch wins.
	srvOff := configFromParams(p, &ServerConfig{SocketOptions: SocketOptions{DisableFastPath: true}})
	assert.False(t, useGRO(&srvOff))
}

// TestDataPathOwnPeers runs our client against our server with each
// data-path option and checks that both ends count the same bytes.
func TestDataPathOwnPeers(t *testing.T) {
	addr, results := startServer(t, nil)
	for name, cfg := range map[string]Config{
		"tcp-skip-rx-copy":      {SocketOptions: SocketOptions{SkipRxCopy: true}},
		"tcp-reverse-skip":      {Reverse: true, SocketOptions: SocketOptions{SkipRxCopy: true}},
		"tcp-zerocopy":          {SocketOptions: SocketOptions{ZeroCopy: true}},
		"tcp-reverse-zerocopy":  {Reverse: true, Streams: 2, SocketOptions: SocketOptions{ZeroCopy: true}},
		"tcp-fqrate":            {SocketOptions: SocketOptions{FQRate: 400e6}},
		"udp-skip-rx-copy":      {UDP: true, Bitrate: 50e6, BlockLen: 1400, SocketOptions: SocketOptions{SkipRxCopy: true}},
		"udp-reverse-skip":      {UDP: true, Bitrate: 50e6, BlockLen: 1400, Reverse: true, SocketOptions: SocketOptions{SkipRxCopy: true}},
		"udp-gsro-unlimited":    {UDP: true, Bitrate: Unlimited, BlockLen: 1400, SocketOptions: SocketOptions{GSO: offloadOn, GRO: offloadOn}},
		"udp-no-gso-bidir":      {UDP: true, Bitrate: 50e6, Bidir: true, SocketOptions: SocketOptions{GSO: offloadOff, GRO: offloadOff}},
		"udp-gro-paced-reverse": {UDP: true, Bitrate: 200e6, BlockLen: 1400, Reverse: true, SocketOptions: SocketOptions{GRO: offloadOn}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Duration, cfg.Interval = 500*time.Millisecond, -1
			pr := pathlab.StartCPUPressure()
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			// A starved machine can hold a 500 ms test's loopback data
			// back for all of it (docs/testing.md): then how much the
			// receiver counted is the machine's, and only the bounds
			// that hold on any machine are judged.
			starved := pr.MachineStarved(t)
			srv := <-results
			assert.Equal(t, cfg.SkipRxCopy, srv.Config.SkipRxCopy, "the server honours skip_rx_copy")
			assert.Equal(t, cfg.ZeroCopy, srv.Config.ZeroCopy)
			for _, s := range []*Summary{res.Upload, res.Download} {
				if s == nil {
					continue
				}
				if !starved {
					assert.Positive(t, s.Received.Bytes)
				}
				switch {
				case s == res.Download:
					// The client ends the test: it stops counting when its
					// timer fires, and the server sends until TEST_END
					// reaches it, as iperf3's does. That tail is the control
					// path's delay, which a loaded machine stretches (441 of
					// 9477 datagrams at 200 Mbit/s once): bound it loosely.
					sent, got := s.Sent.Bytes, s.Received.Bytes
					if cfg.UDP {
						sent, got = s.Sent.Packets, s.Received.Packets
					}
					assert.LessOrEqual(t, got, sent, "the client never counts more than the server sent")
					if !starved {
						assert.Greater(t, got, sent/2, "what the client counted is most of what was sent")
					} else {
						t.Logf("starved machine: the client counted %d of the %d the server sent", got, sent)
					}
				case !cfg.UDP && !cfg.ZeroCopy:
					assert.Equal(t, s.Sent.Bytes, s.Received.Bytes, "TCP: every byte sent is received")
				case !cfg.UDP:
					// sendfile counts a whole socket buffer as sent at once.
					assert.InEpsilon(t, s.Sent.Bytes, s.Received.Bytes, 0.2)
				case cfg.Bitrate == Unlimited:
					// Received.Packets is iperf3's packet count: the highest
					// counter seen, the lost ones included. The test ends
					// with the server's socket buffer full: those datagrams
					// were sent and not yet counted. Each takes at least its
					// payload of the buffer.
					queued := int64(srv.RcvBufActual / cfg.BlockLen)
					require.Positive(t, queued, "the server's receive buffer")
					assert.LessOrEqual(t, s.Received.Packets, s.Sent.Packets, "never more than was sent")
					assert.LessOrEqual(t, s.Sent.Packets-s.Received.Packets, queued+64, "what is missing fits in the server's buffer")
					assert.LessOrEqual(t, s.Received.LostPackets, s.Received.Packets)
				default:
					assert.InDelta(t, s.Sent.Packets, s.Received.Packets, float64(s.Sent.Packets)/100+64,
						"UDP: the packet count (lost ones included) is what was sent")
				}
			}
			if cfg.UDP && udpFastAvailable {
				if cfg.GRO == offloadOn && cfg.Reverse {
					assert.Contains(t, res.UDPOffload, "gro")
				}
				if cfg.GSO == offloadOff {
					assert.Equal(t, "none", res.UDPOffload)
				}
			}
			if !udpFastAvailable {
				assert.NotEmpty(t, res.Notes)
			}
		})
	}
}

// TestIperf321DataPath runs iperf3 3.21 with its data-path options against
// our server, and our client with ours against 3.21's server.
func TestIperf321DataPath(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	addr, results := startServer(t, nil)
	for _, args := range [][]string{
		{"-t", "1", "--skip-rx-copy"},
		{"-t", "1", "-Z", "-R"},
		{"-t", "1", "-Z"},
		{"-t", "1", "-P", "8"},
		{"-t", "1", "--bidir", "-P", "2"},
		{"-t", "1", "-u", "-b", "200M", "-l", "1400", "--gsro"},
		{"-t", "1", "-u", "-b", "200M", "-l", "1400", "--gsro", "-R"},
		{"-t", "1", "-u", "-b", "100M", "--skip-rx-copy"},
		{"-t", "1", "-u", "-b", "50M", "--bidir", "-P", "2"},
		{"-t", "1", "--fq-rate", "500M"},
	} {
		doc, raw := runIperf3ClientBin(t, bin, addr, args...)
		var srv *Result
		select {
		case srv = <-results:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no server result", args)
		}
		assert.Contains(t, srv.PeerVersion, "3.21")
		if srv.Config.UDP {
			require.NotNil(t, doc.End.Sum, "%v: %s", args, raw)
			assert.Positive(t, doc.End.Sum.Packets, "%v", args)
		} else {
			require.NotNil(t, doc.End.SumReceived, "%v: %s", args, raw)
			assert.Positive(t, doc.End.SumReceived.Bytes, "%v", args)
		}
		has := func(a string) bool {
			for _, x := range args {
				if x == a {
					return true
				}
			}
			return false
		}
		assert.Equal(t, has("--skip-rx-copy"), srv.Config.SkipRxCopy, "%v", args)
		assert.Equal(t, has("-Z"), srv.Config.ZeroCopy, "%v", args)
		if srv.Config.UDP {
			want := offloadAuto // a 3.21 client sends 0: ours decides
			if has("--gsro") {
				want = offloadOn
			}
			assert.Equal(t, want, srv.Config.GSO, "%v", args)
			assert.Equal(t, want, srv.Config.GRO, "%v", args)
		}
		if has("--fq-rate") {
			assert.Equal(t, 500e6, srv.Config.FQRate)
		}
	}
	stock := startIperf3ServerBin(t, bin)
	for _, cfg := range []Config{
		{SocketOptions: SocketOptions{SkipRxCopy: true}}, {Reverse: true, SocketOptions: SocketOptions{SkipRxCopy: true}}, {SocketOptions: SocketOptions{ZeroCopy: true}}, {Reverse: true, SocketOptions: SocketOptions{ZeroCopy: true}},
		{Streams: 8}, {Bidir: true, Streams: 2},
		{UDP: true, Bitrate: 200e6, BlockLen: 1400, SocketOptions: SocketOptions{GSO: offloadOn, GRO: offloadOn}},
		{UDP: true, Bitrate: 200e6, BlockLen: 1400, Reverse: true, SocketOptions: SocketOptions{GSO: offloadOn, GRO: offloadOn}},
		{UDP: true, Bitrate: 100e6, SocketOptions: SocketOptions{SkipRxCopy: true}}, {UDP: true, Bitrate: 50e6, Bidir: true},
		// Small datagrams from a 3.21 server: it sent none when asked for
		// GSO without a batch size that fits the kernel's segment limit.
		{UDP: true, Bitrate: 1e6, BlockLen: 100, Reverse: true},
		{UDP: true, Bitrate: 1e6, BlockLen: 100, Reverse: true, SocketOptions: SocketOptions{GSO: offloadOn, GRO: offloadOn}},
		// Counted tests on several streams: every reserved block is
		// written, none cut short when the first stream runs out.
		{Bytes: 64 << 20, Streams: 4}, {Blocks: 300, BlockLen: 64 << 10, Streams: 4},
		{UDP: true, Bitrate: 200e6, BlockLen: 1400, Bytes: 2 << 20, Streams: 2},
	} {
		cfg.Interval = -1
		if cfg.Bytes == 0 && cfg.Blocks == 0 {
			cfg.Duration = time.Second
		}
		res, err := runRetry(t, stock, &cfg)
		require.NoError(t, err, "%+v", cfg)
		if n := cfg.Bytes; n > 0 {
			l := int64(cmp.Or(cfg.BlockLen, iperfTCPBlockLen))
			assert.GreaterOrEqual(t, res.Upload.Sent.Bytes, n, "%+v", cfg)
			assert.Less(t, res.Upload.Sent.Bytes, n+l, "%+v", cfg)
			assert.Zero(t, res.Upload.Sent.Bytes%l, "%+v: a block cut short", cfg)
		}
		if k := cfg.Blocks; k > 0 {
			assert.Equal(t, k*int64(cfg.BlockLen), res.Upload.Sent.Bytes, "%+v", cfg)
		}
		for _, s := range []*Summary{res.Upload, res.Download} {
			if s != nil {
				assert.Positive(t, s.Received.Bytes, "%+v", cfg)
			}
		}
	}
}

// FuzzConfigFromParams feeds parameter objects, 3.21's keys among them, to
// the server's checks and settings: whatever passes the checks must make a
// Config the engine can run.
func FuzzConfigFromParams(f *testing.F) {
	f.Add([]byte(`{"udp":true,"omit":0,"time":3,"num":0,"blockcount":0,"parallel":1,"len":1400,"bandwidth":1000000000,"pacing_timer":1000,"gso":1,"gso_dg_size":1400,"gso_bf_size":64400,"gro":1,"gro_bf_size":65507,"skip_rx_copy":1,"client_version":"3.21"}`))
	f.Add([]byte(`{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":8,"len":131072,"fqrate":1000000000,"zerocopy":1,"skip_rx_copy":1,"dont_fragment":1,"server_affinity":0,"mptcp":true,"congestion_used":"cubic","client_version":"3.21"}`))
	f.Add([]byte(`{"udp":true,"parallel":1,"gso":-1,"gro":7,"fqrate":-5,"zerocopy":-1}`))
	f.Add([]byte(`{"tcp":true,"parallel":1,"fqrate":18446744073709551615}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := iperfwire.DecodeParams(b)
		if err != nil {
			return
		}
		d, err := (&ServerConfig{}).withDefaults()
		require.NoError(t, err)
		sc := &d
		if _, err := checkParams(sc, p); err != nil {
			return
		}
		c := configFromParams(p, sc)
		require.GreaterOrEqual(t, c.FQRate, 0.0)
		require.Contains(t, []*bool{offloadAuto, offloadOn, offloadOff}, c.GSO)
		require.Contains(t, []*bool{offloadAuto, offloadOn, offloadOff}, c.GRO)
		if c.UDP && c.BlockLen > 0 {
			e := &engine{cfg: &c}
			require.GreaterOrEqual(t, e.gsoBatch(), 1)
		}
	})
}

// The offload switches' three settings, as tests name them.
var (
	offloadAuto *bool // the package decides
	offloadOn   = new(true)
	offloadOff  = new(false)
)

// TestConfigJSONOffloads pins the offload switches' JSON: the numbers they
// have always been (1 on, 2 off, absent when the package decides), read
// back into the same switches.
func TestConfigJSONOffloads(t *testing.T) {
	for _, tc := range []struct {
		gso, gro *bool
		want     string
	}{
		{offloadOn, offloadOff, `"gso":1,"gro":2`},
		{offloadOff, offloadOn, `"gso":2,"gro":1`},
		{offloadAuto, offloadAuto, ``},
	} {
		c := Config{UDP: true, SocketOptions: SocketOptions{GSO: tc.gso, GRO: tc.gro, Window: 4096}}
		b, err := json.Marshal(c)
		require.NoError(t, err)
		if tc.want == "" {
			assert.NotContains(t, string(b), `"gso"`)
			assert.NotContains(t, string(b), `"gro"`)
		} else {
			assert.Contains(t, string(b), tc.want)
		}
		assert.Contains(t, string(b), `"window_bytes":4096`, "the other fields are written as before")
		var back Config
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c, back)
	}
	var nilCfg *Config
	assert.Error(t, nilCfg.UnmarshalJSON([]byte(`{}`)))
}

func FuzzConfigJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"udp":true,"gso":1,"gro":2}`, `{"gso":7}`, `{"gso":"x"}`, `[`, `{"streams":3,"window_bytes":10}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var c Config
		if json.Unmarshal([]byte(in), &c) != nil {
			return
		}
		b, err := json.Marshal(c)
		require.NoError(t, err)
		var back Config
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c, back, "a config read back is the config written")
	})
}
