package throughput

import (
	"context"
	"encoding/json"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestSocketOptionsReachServer: the options a stock server takes from the
// parameters (TOS, extra data, don't fragment) reach ours, the client's
// bind address and port are used, and iperf3's start keys are written.
func TestSocketOptionsReachServer(t *testing.T) {
	addr, results := startServer(t, nil)
	port := peertest.QuietPorts(t, 2) // two streams, two client ports
	cfg := &Config{
		Duration:  300 * time.Millisecond,
		Streams:   2,
		ExtraData: "run-42", RepeatingPayload: true,
		SocketOptions: SocketOptions{TOS: 0x20, SendTimeout: 5 * time.Second, BindAddr: "127.0.0.1", ClientPort: port},
	}
	res, err := Run(ctxT(t, 20*time.Second), addr, cfg)
	require.NoError(t, err)
	_, p0, _ := net.SplitHostPort(res.Streams[0].LocalAddr)
	_, p1, _ := net.SplitHostPort(res.Streams[1].LocalAddr)
	assert.Equal(t, []string{itoa(port), itoa(port + 1)}, []string{p0, p1}, "--cport numbers the streams from the port")
	sr := <-results
	assert.Equal(t, 0x20, sr.Config.TOS)
	assert.Equal(t, "run-42", sr.Config.ExtraData)
	assert.True(t, sr.Config.RepeatingPayload)
	doc, err := iperfJSON(res)
	require.NoError(t, err)
	var m struct {
		ExtraData string `json:"extra_data"`
		Start     struct {
			Timestamp     map[string]any `json:"timestamp"`
			TCPMSSDefault *int           `json:"tcp_mss_default"`
			TestStart     map[string]any `json:"test_start"`
		} `json:"start"`
	}
	require.NoError(t, json.Unmarshal(doc, &m))
	assert.Equal(t, "run-42", m.ExtraData)
	assert.Contains(t, m.Start.Timestamp, "timemillisecs")
	assert.Equal(t, float64(0x20), m.Start.TestStart["tos"])
	assert.Contains(t, m.Start.TestStart, "bidir", "written when 0, as 3.21 does")
	if runtime.GOOS == "linux" {
		require.NotNil(t, m.Start.TCPMSSDefault)
		assert.Positive(t, *m.Start.TCPMSSDefault)
	}

	ures, err := Run(ctxT(t, 20*time.Second), addr, &Config{UDP: true, Duration: 300 * time.Millisecond, SocketOptions: SocketOptions{DontFragment: true, TOS: 0x10}})
	require.NoError(t, err)
	assert.Positive(t, ures.Upload.Received.Packets)
	assert.True(t, (<-results).Config.DontFragment)

	_, err = Run(ctxT(t, 5*time.Second), addr, &Config{SocketOptions: SocketOptions{TOS: 300}})
	assert.Error(t, err)
	_, err = Run(ctxT(t, 5*time.Second), addr, &Config{SocketOptions: SocketOptions{BindAddr: "not-an-ip"}})
	assert.Error(t, err)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestBindDeviceAndMPTCP: a client bound to lo (--bind-dev) and dialling
// MPTCP (-m) runs against a server that listens with MPTCP on lo; the
// server learns of -m as a 3.21 server does; a device that does not exist
// fails the run with the kernel's word, and a bound server's UDP test runs.
func TestBindDeviceAndMPTCP(t *testing.T) {
	if runtime.GOOS != "linux" {
		_, err := Run(ctxT(t, 5*time.Second), "127.0.0.1:1", &Config{SocketOptions: SocketOptions{BindDevice: "lo"}})
		require.ErrorIs(t, err, errNotAvailable)
		return
	}
	results := make(chan *Result, 4)
	addrs := make(chan net.Addr, 1)
	srv, err := NewServer(&ServerConfig{
		OnListen: func(a net.Addr) { addrs <- a }, OnResult: func(r Result) { results <- &r }, SocketOptions: SocketOptions{BindDevice: "lo", MPTCP: true}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "tcp", "127.0.0.1:0") }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled, "Serve returns ctx.Err()")
	})
	addr := (<-addrs).String()
	for _, cfg := range []Config{
		// Counts, not times: data moves however loaded the machine.
		{Bytes: 1 << 20, SocketOptions: SocketOptions{BindDevice: "lo", MPTCP: true, ControlKeepAlive: &net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 3}}},
		{Bytes: 256 << 10, UDP: true, Bitrate: 10e6, SocketOptions: SocketOptions{BindDevice: "lo"}},
	} {
		res, err := Run(ctxT(t, 20*time.Second), addr, &cfg)
		require.NoError(t, err, "%+v", cfg)
		s := res.Upload
		assert.Positive(t, s.Received.Bytes)
		sr := <-results
		assert.Equal(t, cfg.MPTCP, sr.Config.MPTCP, "the server is told of -m")
	}
	_, err = Run(ctxT(t, 5*time.Second), addr, &Config{Duration: time.Second, SocketOptions: SocketOptions{BindDevice: "nosuchdev0"}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "bind to device nosuchdev0")
	_, err = Run(ctxT(t, 5*time.Second), addr, &Config{SocketOptions: SocketOptions{BindDevice: "a-name-longer-than-15"}})
	assert.ErrorContains(t, err, "longer than 15 bytes")
	_, err = NewServer(&ServerConfig{SocketOptions: SocketOptions{BindDevice: "a-name-longer-than-15"}})
	assert.ErrorContains(t, err, "longer than 15 bytes")
}
