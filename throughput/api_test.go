package throughput_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
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
		{"Run too many streams", run(&throughput.Config{Streams: throughput.MaxStreams + 1}), "Config.Streams"},
		{"Run negative block", run(&throughput.Config{BlockLen: -1}), "Config.BlockLen"},
		{"Run tiny UDP block", run(&throughput.Config{UDP: true, BlockLen: 1}), "Config.BlockLen"},
		{"Run reverse bidir", run(&throughput.Config{Reverse: true, Bidir: true}), "Config.Reverse"},
		{"Run TOS", run(&throughput.Config{SocketOptions: throughput.SocketOptions{TOS: 256}}), "Config.TOS"},
		{"Run burst", run(&throughput.Config{Burst: -1}), "Config.Burst"},
		{"Run client port", run(&throughput.Config{SocketOptions: throughput.SocketOptions{ClientPort: 70000}}), "Config.ClientPort"},
		{"Run bind addr", run(&throughput.Config{SocketOptions: throughput.SocketOptions{BindAddr: "not-an-ip"}}), "Config.BindAddr"},
		{"Run flow label", run(&throughput.Config{SocketOptions: throughput.SocketOptions{FlowLabel: -1}}), "Config.FlowLabel"},
		{"Run send timeout", run(&throughput.Config{SocketOptions: throughput.SocketOptions{SendTimeout: -1}}), "Config.SendTimeout"},
		{"Run affinity", run(&throughput.Config{Iperf3Options: throughput.Iperf3Options{ServerAffinity: new(-1)}}), "Config.ServerAffinity"},
		{"NewServer negative MaxTests", func() error { _, err := throughput.NewServer(&throughput.ServerConfig{MaxTests: -1}); return err }, "ServerConfig.MaxTests"},
		{"NewServer negative IdleTimeout", func() error { _, err := throughput.NewServer(&throughput.ServerConfig{IdleTimeout: -1}); return err }, "ServerConfig.IdleTimeout"},
		{"NewServer MaxStreams", func() error {
			_, err := throughput.NewServer(&throughput.ServerConfig{MaxStreams: throughput.MaxStreams + 1})
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
		{"ParseJitterClock", func() error { _, err := throughput.ParseJitterClock(""); return err }, "jitter clock"},
		{"UnmarshalText", func() error { var c throughput.JitterClock; return c.UnmarshalText([]byte("x")) }, "jitter clock"},
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
		{"JitterClock", func() error { assert.Equal(t, "JitterClock(9)", throughput.JitterClock(9).String()); return nil }},
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
	require.Eventually(t, func() bool { return srv.Stats().Completed == 1 }, 5*time.Second, 10*time.Millisecond)
	b, err := json.Marshal(srv.Stats())
	require.NoError(t, err)
	assert.JSONEq(t, `{"started":1,"completed":1,"failed":{}}`, string(b), "snake_case keys")
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}
