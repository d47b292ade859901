package latency_test

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/latencytest"
)

// hookLog collects what OnMessage hears, and fails the test if two calls
// overlap (the hook is never called concurrently with itself).
type hookLog struct {
	t       *testing.T
	busy    atomic.Bool
	mu      sync.Mutex
	sent    []time.Time
	rtts    []time.Duration
	lost    int
	lostErr error
}

func (h *hookLog) hook(sent time.Time, rtt time.Duration, err error) {
	if !h.busy.CompareAndSwap(false, true) {
		h.t.Error("OnMessage called concurrently with itself")
	}
	defer h.busy.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent = append(h.sent, sent)
	if err != nil {
		h.lost++
		h.lostErr = err
		assert.Zero(h.t, rtt)
		return
	}
	h.rtts = append(h.rtts, rtt)
}

func TestPingPongOnMessage(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			srv := latencytest.NewServer(t, &latencytest.Config{Network: network})
			h := &hookLog{t: t}
			before := time.Now()
			res, err := latency.PingPong(context.Background(), srv.Addr, &latency.PingPongConfig{
				Network: network, Count: 200, ReadTimeout: 10 * time.Second, OnMessage: h.hook,
			})
			require.NoError(t, err)
			require.Len(t, h.sent, 200, "one call a message")
			assert.Zero(t, h.lost)
			assert.Equal(t, res.Samples, h.rtts, "the hook hears the round trips the Summary counts, in send order")
			assert.False(t, h.sent[0].Before(before))
			for i := 1; i < len(h.sent); i++ {
				assert.False(t, h.sent[i].Before(h.sent[i-1]), "in send order")
			}
		})
	}
}

// TestPingPongOnMessageLost: every tenth reply is lost; the hook hears of
// each lost message with an error wrapping ErrNoReply, with the fixed and
// the adaptive timeout alike.
func TestPingPongOnMessageLost(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		t.Run(map[bool]string{false: "fixed", true: "adaptive"}[adaptive], func(t *testing.T) {
			addr, _ := impairEvery(t, 10, 0)
			h := &hookLog{t: t}
			res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
				Count: 100, ReadTimeout: 300 * time.Millisecond, AdaptiveTimeout: adaptive, OnMessage: h.hook,
			})
			require.NoError(t, err)
			assert.Len(t, h.sent, 100, "one call a message")
			assert.Equal(t, 10, h.lost)
			assert.Equal(t, res.Dropped, int64(h.lost))
			assert.ErrorIs(t, h.lostErr, latency.ErrNoReply)
			assert.Len(t, h.rtts, 90)
		})
	}
}

func TestPingPongOnMessageUnderLoad(t *testing.T) {
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	h := &hookLog{t: t}
	res, err := latency.PingPong(context.Background(), srv.Addr, &latency.PingPongConfig{
		MPS: 2000, Count: 1000, ReplyEvery: 10, ReadTimeout: 10 * time.Second, OnMessage: h.hook,
	})
	require.NoError(t, err)
	assert.Len(t, h.sent, 100, "one call a message that asked for a reply")
	assert.Equal(t, res.Received, int64(len(h.rtts)))
	assert.Equal(t, 100, len(h.rtts)+h.lost)
}

// echo answers every UDP datagram with itself, as a plain echo server does
// (not sockperf's format: the reply keeps the client's flag); received
// counts them.
func echo(t *testing.T, network string) (addr string, received func() int64) {
	t.Helper()
	var n atomic.Int64
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 1<<16)
			for {
				k, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				n.Add(1)
				_, _ = pc.WriteTo(buf[:k], from)
			}
		}()
		return pc.LocalAddr().String(), n.Load
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String(), n.Load
}

// TestPingPongPlainEcho: an echo server returns every message, but not as
// sockperf's reply. The run says so (not "none came"), and does not wait
// ReadTimeout for each message: 300 messages at 10 s would take 50 minutes.
func TestPingPongPlainEcho(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr, _ := echo(t, network)
			start := time.Now()
			res, err := latency.PingPong(context.Background(), addr, &latency.PingPongConfig{
				Network: network, Count: 300, ReadTimeout: 10 * time.Second,
			})
			require.ErrorIs(t, err, latency.ErrNoReply)
			assert.ErrorContains(t, err, "none of them a sockperf reply")
			assert.NotContains(t, err.Error(), "none came within ReadTimeout")
			assert.Less(t, time.Since(start), 5*time.Minute, "a liveness bound: waiting out each message would take 50 min")
			assert.Equal(t, int64(300), res.Sent)
			assert.Equal(t, int64(300), res.Dropped)
			assert.Zero(t, res.Received)
		})
	}
}

// TestPingPongNoMeasureNoKernelBlame: with no message measured at all, the
// missing kernel view is not blamed on the kernel.
func TestPingPongNoMeasureNoKernelBlame(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel view is linux's")
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	res, err := latency.PingPong(context.Background(), pc.LocalAddr().String(), &latency.PingPongConfig{
		Count: 2, ReadTimeout: 50 * time.Millisecond, KernelStamps: true,
	})
	require.ErrorIs(t, err, latency.ErrNoReply)
	assert.Nil(t, res.KernelRTT)
	assert.Contains(t, res.NoKernelStamps, "no message was measured")
	assert.NotContains(t, res.NoKernelStamps, "kernel")
}

// TestPingPongSilentSaysWhy: a UDP server that is not there: the error
// says a check from an unconnected socket got no reply either.
func TestPingPongSilentSaysWhy(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	_, err = latency.PingPong(context.Background(), pc.LocalAddr().String(), &latency.PingPongConfig{
		Count: 2, ReadTimeout: 50 * time.Millisecond,
	})
	require.ErrorIs(t, err, latency.ErrNoReply)
	assert.ErrorContains(t, err, "multi-homed")
	assert.ErrorContains(t, err, "nothing answers there")
	assert.False(t, errors.Is(err, context.Canceled))
}
