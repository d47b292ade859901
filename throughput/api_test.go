package throughput_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// callDeadline bounds every call of the API walk: misuse must be refused
// at once, never run a test or wait on a peer.
const callDeadline = time.Second

// call runs f under callDeadline and returns its error, failing the test
// when f panics or does not return in time.
func call(t *testing.T, f func() error) error {
	t.Helper()
	type outcome struct {
		err   error
		panic any
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{panic: p}
			}
		}()
		done <- outcome{err: f()}
	}()
	select {
	case o := <-done:
		require.Nil(t, o.panic, "panicked")
		return o.err
	case <-time.After(callDeadline):
		t.Fatalf("did not return within %v", callDeadline)
		return nil
	}
}

// unreachable is an address nothing listens on: a call that got past its
// checks would fail to connect, not succeed.
const unreachable = "127.0.0.1:1"

// TestAPIMisuse walks the exported API with nil, zero, negative and
// out-of-range input: every call returns an error naming what is wrong,
// within a second, without a panic.
func TestAPIMisuse(t *testing.T) {
	ctx := context.Background()
	run := func(c *throughput.Config) func() error {
		return func() error { _, err := throughput.Run(ctx, unreachable, c); return err }
	}
	srv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	var zero throughput.Server
	var nilSrv *throughput.Server
	var nilCtx context.Context // the misuse under test
	cases := []struct {
		name string
		f    func() error
		want string // in the error
	}{
		{"Run nil ctx", func() error { _, err := throughput.Run(nilCtx, unreachable, nil); return err }, "ctx"},
		{"Run empty addr", func() error { _, err := throughput.Run(ctx, "", nil); return err }, "addr"},
		{"Run 1ns", run(&throughput.Config{Duration: time.Nanosecond}), "Config.Duration"},
		{"Run 9ms", run(&throughput.Config{Duration: 9 * time.Millisecond}), "Config.Duration"},
		{"Run negative duration", run(&throughput.Config{Duration: -time.Second}), "Config.Duration"},
		{"Run negative connect timeout", run(&throughput.Config{ConnectTimeout: -1}), "Config.ConnectTimeout"},
		{"Run negative IO timeout", run(&throughput.Config{IOTimeout: -1}), "Config.IOTimeout"},
		{"Run negative omit", run(&throughput.Config{Omit: -1}), "Config.Omit"},
		{"Run negative bytes", run(&throughput.Config{Bytes: -1}), "Config.Bytes"},
		{"Run negative blocks", run(&throughput.Config{Blocks: -1}), "Config.Blocks"},
		{"Run negative streams", run(&throughput.Config{Streams: -1}), "Config.Streams"},
		{"Run too many streams", run(&throughput.Config{Streams: 129}), "Config.Streams"},
		{"Run negative block", run(&throughput.Config{BlockLen: -1}), "Config.BlockLen"},
		{"Run tiny UDP block", run(&throughput.Config{UDP: true, BlockLen: 1}), "Config.BlockLen"},
		{"Run reverse bidir", run(&throughput.Config{Reverse: true, Bidir: true}), "Config.Reverse"},
		{"Run TOS", run(&throughput.Config{SocketOptions: throughput.SocketOptions{TOS: 256}}), "Config.TOS"},
		{"Run burst", run(&throughput.Config{Burst: -1}), "Config.Burst"},
		{"Run client port", run(&throughput.Config{SocketOptions: throughput.SocketOptions{ClientPort: 70000}}), "Config.ClientPort"},
		{"Run bind addr", run(&throughput.Config{SocketOptions: throughput.SocketOptions{BindAddr: "not-an-ip"}}), "Config.BindAddr"},
		{"Run flow label", run(&throughput.Config{SocketOptions: throughput.SocketOptions{FlowLabel: -1}}), "Config.FlowLabel"},
		{"Run send timeout", run(&throughput.Config{SocketOptions: throughput.SocketOptions{SendTimeout: -1}}), "Config.SendTimeout"},
		{"Run affinity", run(&throughput.Config{ServerAffinity: new(-1)}), "Config.ServerAffinity"},
		{"Run huge TCP block", run(&throughput.Config{BlockLen: math.MaxInt32}), "Config.BlockLen 2147483647 bytes above iperf3's maximum of 1048576 bytes"},
		{"Run huge UDP block", run(&throughput.Config{UDP: true, BlockLen: 65508}), "Config.BlockLen 65508 bytes outside iperf3's 16..65507 bytes"},
		{"Run negative read", run(&throughput.Config{SocketOptions: throughput.SocketOptions{ReadLen: -1}}), "Config.ReadLen -1 bytes"},
		{"Run huge read", run(&throughput.Config{SocketOptions: throughput.SocketOptions{ReadLen: math.MaxInt32}}), "Config.ReadLen 2147483647 bytes"},
		{"Run negative window", run(&throughput.Config{SocketOptions: throughput.SocketOptions{Window: -1}}), "Config.Window -1 bytes"},
		{"Run huge window", run(&throughput.Config{SocketOptions: throughput.SocketOptions{Window: math.MaxInt32}}), "Config.Window 2147483647 bytes outside iperf3's 0..536870912 bytes"},
		{"Run negative MSS", run(&throughput.Config{SocketOptions: throughput.SocketOptions{MSS: -1}}), "Config.MSS -1 bytes"},
		{"Run huge MSS", run(&throughput.Config{SocketOptions: throughput.SocketOptions{MSS: 65536}}), "Config.MSS 65536 bytes outside iperf3's 0..32767 bytes"},
		{"Run NaN bitrate", run(&throughput.Config{Bitrate: math.NaN()}), "Config.Bitrate NaN bits/s"},
		{"Run infinite bitrate", run(&throughput.Config{Bitrate: math.Inf(1)}), "Config.Bitrate +Inf bits/s"},
		{"Run huge bitrate", run(&throughput.Config{Bitrate: 1e30}), "Config.Bitrate 1e+30 bits/s"},
		{"Run negative FQ rate", run(&throughput.Config{SocketOptions: throughput.SocketOptions{FQRate: -1}}), "Config.FQRate -1 bits/s"},
		{"Run NaN FQ rate", run(&throughput.Config{SocketOptions: throughput.SocketOptions{FQRate: math.NaN()}}), "Config.FQRate NaN bits/s"},
		{"Run long omit", run(&throughput.Config{Omit: 601 * time.Second}), "Config.Omit 10m1s above iperf3's maximum 10m0s"},
		{"Run endless duration", run(&throughput.Config{Duration: math.MaxInt64}), "Config.Duration 2562047h47m16.854775807s above the maximum"},
		{"Run endless send timeout", run(&throughput.Config{SocketOptions: throughput.SocketOptions{SendTimeout: math.MaxInt64}}), "Config.SendTimeout 2562047h47m16.854775807s above"},
		{"Run client ports past 65535", run(&throughput.Config{Streams: 4, SocketOptions: throughput.SocketOptions{ClientPort: 65534}}), "Config.ClientPort 65534: its 4 streams"},
		{"Run 1ns interval", run(&throughput.Config{Interval: time.Nanosecond}), "Config.Interval 1ns below the minimum 10ms"},
		{"Run huge title", run(&throughput.Config{Title: strings.Repeat("t", 9000)}), "Config.Title (9000 bytes)"},
		{"Run huge extra data", run(&throughput.Config{ExtraData: strings.Repeat("x", 9000)}), "Config.ExtraData (9000 bytes)"},
		{"NewServer huge ReadLen", func() error {
			_, err := throughput.NewServer(&throughput.ServerConfig{SocketOptions: throughput.SocketOptions{ReadLen: math.MaxInt32}})
			return err
		}, "ServerConfig.ReadLen 2147483647 bytes"},
		{"NewServer 1ns Interval", func() error {
			_, err := throughput.NewServer(&throughput.ServerConfig{Interval: time.Nanosecond})
			return err
		}, "ServerConfig.Interval 1ns"},
		{"NewServer negative MaxTests", func() error { _, err := throughput.NewServer(&throughput.ServerConfig{MaxTests: -1}); return err }, "ServerConfig.MaxTests"},
		{"NewServer negative IdleTimeout", func() error { _, err := throughput.NewServer(&throughput.ServerConfig{IdleTimeout: -1}); return err }, "ServerConfig.IdleTimeout"},
		{"NewServer MaxStreams", func() error {
			_, err := throughput.NewServer(&throughput.ServerConfig{MaxStreams: 129})
			return err
		}, "ServerConfig.MaxStreams"},
		{"NewServer window", func() error {
			_, err := throughput.NewServer(&throughput.ServerConfig{TotalBitrateWindow: time.Nanosecond})
			return err
		}, "ServerConfig.TotalBitrateWindow"},
		{"Serve nil listener", func() error { return srv.Serve(ctx, nil) }, "ln"},
		{"Serve nil ctx", func() error { return srv.Serve(nilCtx, nil) }, "throughput:"},
		{"Serve zero Server", func() error { return zero.Serve(ctx, nil) }, "NewServer"},
		{"Serve nil Server", func() error { return nilSrv.Serve(ctx, nil) }, "NewServer"},
		{"ListenAndServe udp", func() error { return srv.ListenAndServe(ctx, "udp", "127.0.0.1:0") }, "network"},
		{"ListenAndServe empty network", func() error { return srv.ListenAndServe(ctx, "", "127.0.0.1:0") }, "network"},
		{"ListenAndServe bad address", func() error { return srv.ListenAndServe(ctx, "tcp", "127.0.0.1:99999") }, "listen"},
		{"ListenAndServe zero Server", func() error { return zero.ListenAndServe(ctx, "tcp", "127.0.0.1:0") }, "NewServer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, tc.f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "throughput: "), "%q names its package", err)
		})
	}
}

// TestAPIZeroValues calls the methods of zero values and nil pointers that
// document a zero result: none panics.
func TestAPIZeroValues(t *testing.T) {
	var zero throughput.Server
	var nilRes *throughput.Result
	checks := []struct {
		name string
		f    func() error
	}{
		{"Server.Addr", func() error { assert.Nil(t, zero.Addr()); return nil }},
		{"Server.Stats", func() error { assert.Zero(t, zero.Stats().Started); return nil }},
		{"nil Server.Stats", func() error { assert.Zero(t, (*throughput.Server)(nil).Stats().Completed); return nil }},
		{"nil Result.Total", func() error { assert.Equal(t, throughput.Summary{}, nilRes.Total()); return nil }},
		{"zero Result.Total", func() error { assert.Equal(t, throughput.Summary{}, (&throughput.Result{}).Total()); return nil }},
		{"SessionError", func() error { assert.Contains(t, (&throughput.SessionError{}).Error(), "throughput:"); return nil }},
		{"ServerError", func() error { assert.Contains(t, (&throughput.ServerError{}).Error(), "throughput:"); return nil }},
		{"ClientAuth", func() error {
			assert.NotPanics(t, func() { _ = fmt.Sprintf("%v %#v", iperf3auth.Client{}, iperf3auth.Client{}) })
			return nil
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { require.NoError(t, call(t, c.f)) })
	}
}

// TestServerShape: Addr is nil before Serve and the listener's address
// while it serves, and Serve returns ctx.Err() when its context ends.
func TestServerShape(t *testing.T) {
	listened := make(chan net.Addr, 1)
	srv, err := throughput.NewServer(&throughput.ServerConfig{OnListen: func(a net.Addr) { listened <- a }})
	require.NoError(t, err)
	assert.Nil(t, srv.Addr(), "nil before listening")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "tcp4", "127.0.0.1:0") }()
	a := <-listened
	assert.Equal(t, a, srv.Addr())
	res, err := throughput.Run(ctx, a.String(), &throughput.Config{Bytes: 1 << 20, Interval: -1})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Total().Received.Bytes, int64(1<<20), "a forward test reads through Total")
	assert.Nil(t, res.Download, "a forward test has no download")
	// A Run that returned finds its test counted: no wait (issue 39).
	assert.Equal(t, int64(1), srv.Stats().Completed, "counted before Run returned")
	for i := int64(2); i <= 3; i++ {
		_, err := throughput.Run(ctx, a.String(), &throughput.Config{Bytes: 64 << 10, Interval: -1, UDP: i == 3, Bitrate: 10e6})
		require.NoError(t, err)
		assert.Equal(t, i, srv.Stats().Completed, "test %d counted before its Run returned", i)
	}
	b, err := json.Marshal(srv.Stats())
	require.NoError(t, err)
	assert.JSONEq(t, `{"started":3,"completed":3,"failed":{}}`, string(b), "snake_case keys")
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

// serve runs a throughput server with cfg on a loopback port until the
// test ends and returns its address.
func serve(t *testing.T, cfg *throughput.ServerConfig) string {
	t.Helper()
	srv, err := throughput.NewServer(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// silentPeer accepts connections and never answers: a server that hangs.
func silentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepted
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// readAll reads every field of r (through its JSON form) and calls every
// method that takes no argument: a result returned with an error must be
// readable without a panic.
func readAll(t *testing.T, r *throughput.Result) {
	t.Helper()
	_, err := json.Marshal(r)
	require.NoError(t, err)
	v := reflect.ValueOf(r)
	for i := range v.NumMethod() {
		if m := v.Method(i); m.Type().NumIn() == 0 {
			assert.NotPanics(t, func() { m.Call(nil) }, v.Type().Method(i).Name)
		}
	}
}

// TestRunResultNeverNil: on every error path Run returns a non-nil Result
// beside its error (docs/conventions.md, "Results after an error"), with
// Role and Config set and nothing it did not measure: before the
// connection exists, after a refused one, a server's refusal, a silent
// peer, and a context that ends before or during the test.
func TestRunResultNeverNil(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	var nilCtx context.Context // the misuse under test
	cases := []struct {
		name string
		ctx  context.Context
		addr func(t *testing.T) string
		cfg  *throughput.Config
		is   error // errors.Is target, nil when any error will do
	}{
		{"nil ctx", nilCtx, func(*testing.T) string { return unreachable }, nil, nil},
		{"empty addr", ctx, func(*testing.T) string { return "" }, nil, nil},
		{"negative IO timeout", ctx, func(*testing.T) string { return unreachable }, &throughput.Config{IOTimeout: -1}, nil},
		{"invalid config", ctx, func(*testing.T) string { return unreachable }, &throughput.Config{BlockLen: math.MaxInt32}, nil},
		{"refused connection", ctx, func(*testing.T) string { return unreachable }, nil, syscall.ECONNREFUSED},
		{"cancelled before connect", canceled, func(*testing.T) string { return unreachable }, nil, context.Canceled},
		{"server refuses", ctx, func(t *testing.T) string { return serve(t, &throughput.ServerConfig{MaxStreams: 1}) },
			&throughput.Config{Streams: 2, Bytes: 1 << 20}, throughput.ErrServerError},
		{"silent peer", ctx, silentPeer, &throughput.Config{IOTimeout: 200 * time.Millisecond}, os.ErrDeadlineExceeded},
		{"cancelled during the handshake", ctx, silentPeer, &throughput.Config{IOTimeout: time.Minute}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if tc.name == "cancelled during the handshake" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
			}
			addr := tc.addr(t)
			var res *throughput.Result
			err := call5s(t, func() error {
				var err error
				res, err = throughput.Run(ctx, addr, tc.cfg)
				return err
			})
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			require.NotNil(t, res, "Run returned a nil Result with %v", err)
			assert.Equal(t, "client", res.Role)
			assert.Nil(t, res.Upload, "nothing measured")
			assert.Nil(t, res.Download, "nothing measured")
			assert.Empty(t, res.Intervals)
			assert.Zero(t, res.Total().Received.Bytes)
			readAll(t, res)
		})
	}
}

// TestRunResultAfterDataFlowed: a test cancelled while data flows returns
// the counts so far, readable, with ctx's error.
func TestRunResultAfterDataFlowed(t *testing.T) {
	addr := serve(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := throughput.Run(ctx, addr, &throughput.Config{Duration: time.Minute, Interval: 100 * time.Millisecond,
		OnInterval: func(throughput.Interval) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.NotEmpty(t, res.Intervals, "the interval that cancelled it is kept")
	assert.NotEmpty(t, res.LocalAddr, "connected")
	assert.Zero(t, res.Upload.Received.Bytes, "the server's count never arrived")
	assert.Contains(t, strings.Join(res.Notes, "\n"), "not exchanged because the test was cancelled",
		"the 0 B received says why (issue 39)")
	readAll(t, res)
}

// call5s is call with a bound for calls that reach a peer: several seconds
// against a hang, never a measure of speed.
func call5s(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("did not return within 5 s")
		return nil
	}
}

// TestServerRefusalNamesItsReason: a server's refusal reads as what its
// i_errno means, and still matches ErrServerError, whether the server is
// ours refusing a limit of its own or any iperf3 server sending a code.
func TestServerRefusalNamesItsReason(t *testing.T) {
	addr := serve(t, &throughput.ServerConfig{MaxStreams: 2})
	res, err := throughput.Run(context.Background(), addr, &throughput.Config{Streams: 3, Bytes: 1 << 20})
	require.ErrorIs(t, err, throughput.ErrServerError)
	assert.EqualError(t, err, "throughput: server refused: number of streams invalid (i_errno 6)")
	var se *throughput.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 6, se.IErrno)
	require.NotNil(t, res)

	// The codes of a stock server's refusal, as Run's error reads them.
	for _, c := range []struct {
		se   throughput.ServerError
		want string
	}{
		{throughput.ServerError{IErrno: 7}, "throughput: server refused: block size invalid (i_errno 7)"},
		{throughput.ServerError{IErrno: 8}, "throughput: server refused: socket buffer size invalid (i_errno 8)"},
		{throughput.ServerError{IErrno: 10}, "throughput: server refused: TCP MSS invalid (i_errno 10)"},
		{throughput.ServerError{IErrno: 20}, "throughput: server refused: UDP block size invalid (i_errno 20)"},
		{throughput.ServerError{IErrno: 27}, "throughput: server refused: total required bandwidth is larger than server limit (i_errno 27)"},
		{throughput.ServerError{IErrno: 142}, "throughput: server refused: test authorization failed (i_errno 142)"},
		{throughput.ServerError{IErrno: 132, Errno: 22}, "throughput: server error: unable to set CPU affinity (i_errno 132, errno 22)"},
		{throughput.ServerError{IErrno: 204, Errno: 11}, "throughput: server error: unable to accept stream connection (i_errno 204, errno 11)"},
		{throughput.ServerError{IErrno: 999, Errno: 3}, "throughput: server error: i_errno 999, errno 3"},
	} {
		assert.EqualError(t, &c.se, c.want)
		assert.ErrorIs(t, &c.se, throughput.ErrServerError)
	}
}
