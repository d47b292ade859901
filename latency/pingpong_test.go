package latency

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

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPingPongLoopback(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		for _, mode := range []time.Duration{0, time.Millisecond} {
			t.Run(network+"/"+modeName(mode), func(t *testing.T) {
				addr, srv := startServer(t, network, nil)
				// ReadTimeout 10 s: a loaded machine that stalls a round
				// trip does not make it a drop.
				res, err := PingPong(context.Background(), addr, &PingPongConfig{
					Network: network, Count: 500, MessageSize: 64, Spin: mode, ReadTimeout: 10 * time.Second,
				})
				if mode > 0 && err != nil {
					require.ErrorIs(t, err, errors.ErrUnsupported)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, int64(500), res.Observations)
				assert.Equal(t, int64(500), res.Sent)
				assert.Equal(t, int64(500), res.Received)
				assert.Equal(t, int64(0), res.Dropped)
				assert.Len(t, res.Samples, 500)
				assert.Equal(t, int64(500), res.Recorder.Count())
				assert.Greater(t, usOf(res.Min), 0.0)
				assert.LessOrEqual(t, usOf(res.Min), usOf(res.P50))
				assert.LessOrEqual(t, usOf(res.P50), usOf(res.Max))
				assert.Equal(t, 64, res.messageSize)
				if runtime.GOOS == "linux" {
					// Both receive paths read in the kernel with its
					// arrival times: a measured reply has a wake-up.
					// Over TCP the kernel does not stamp every segment a
					// loaded loopback delivers (the CI's busy loops once
					// left 206 of 500 with a stamp); each stamp is one
					// reply's.
					require.NotNil(t, res.ReceiveWake)
					if network == "udp" {
						assert.Equal(t, int64(500), res.ReceiveWake.Observations)
					}
					assert.LessOrEqual(t, res.ReceiveWake.Observations, int64(500))
					assert.LessOrEqual(t, res.ReceiveWake.Max, res.Max, "the wake-up is part of the round trip")
				}
				assert.Nil(t, res.SendLateness, "ping-pong sends on the reply: no schedule to be late for")
				st := srv.Stats()
				if network == "udp" {
					assert.Equal(t, int64(508), st.Messages, "500 + 8 warm-up messages")
				} else {
					assert.Equal(t, int64(500), st.Messages, "no warm-up messages over TCP")
				}
				assert.Equal(t, int64(0), st.Rejected)
			})
		}
	}
}

func TestPingPongTimedWindow(t *testing.T) {
	addr, _ := startServer(t, "udp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{
		Duration: 300 * time.Millisecond, WarmUp: 100 * time.Millisecond, CoolDown: 50 * time.Millisecond,
		ReadTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	// How many round trips fall in the 150 ms window depends on the machine
	// (a loaded one can stall a whole window); what was counted is
	// consistent, and the first message, sent at once, is in the warm-up.
	assert.Equal(t, res.Observations, int64(len(res.Samples)))
	assert.Equal(t, res.Observations, res.Recorder.Count())
	assert.Less(t, res.Observations+res.Dropped, res.Sent, "warm-up and cool-down messages are not counted")
	assert.InDelta(t, 0.15, res.ValidTime.Seconds(), 1e-9)
	assert.GreaterOrEqual(t, res.RunTime.Seconds(), 0.3, "the run ends with the first message due at or after its end")
	assert.Less(t, res.RunTime.Seconds(), 0.3+5, "the run ends after at most one more reply wait (ReadTimeout)")
	assert.Greater(t, res.AchievedMPS, 0.0)
}

// TestPingPongWindow checks the measurement window of a timed run: send
// times from WarmUp after the start up to CoolDown before the end.
func TestPingPongWindow(t *testing.T) {
	r := &run{cfg: PingPongConfig{Duration: 300 * time.Millisecond, WarmUp: 100 * time.Millisecond, CoolDown: 50 * time.Millisecond},
		base: time.Now()}
	r.setWindow()
	assert.Equal(t, int64(100*time.Millisecond), r.winStart-r.start)
	assert.Equal(t, int64(250*time.Millisecond), r.winEnd-r.start)
	assert.Equal(t, int64(300*time.Millisecond), r.end-r.start)
	assert.False(t, r.inWindow(r.start))
	assert.False(t, r.inWindow(r.winStart-1))
	assert.True(t, r.inWindow(r.winStart))
	assert.True(t, r.inWindow(r.winEnd-1))
	assert.False(t, r.inWindow(r.winEnd))
}

func TestPingPongSilentServerDrops(t *testing.T) {
	// A UDP socket that never answers: the run must end with drops, and
	// with ErrNoReply, since nothing answered at all.
	pc, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	res, err := PingPong(context.Background(), pc.LocalAddr().String(), &PingPongConfig{
		Count: 3, ReadTimeout: 50 * time.Millisecond,
	})
	require.ErrorIs(t, err, ErrNoReply)
	assert.Equal(t, int64(3), res.Dropped)
	assert.Equal(t, int64(0), res.Observations)
}

func TestPingPongUnderLoad(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr, srv := startServer(t, network, nil)
			res, err := PingPong(context.Background(), addr, &PingPongConfig{
				Network: network, Duration: 500 * time.Millisecond, MPS: 2000, ReplyEvery: 10,
				WarmUp: 100 * time.Millisecond, MessageSize: 100,
			})
			require.NoError(t, err)
			assert.InDelta(t, 1000, res.Sent, 2, "the schedule fixes the number of messages")
			// A sender a loaded machine holds up stretches RunTime, so
			// only the schedule bounds the achieved rate: it never sends
			// ahead of it, and the last message is due at 999/2000 s.
			assert.GreaterOrEqual(t, res.RunTime.Seconds(), 0.4995)
			assert.Positive(t, res.AchievedMPS)
			assert.LessOrEqual(t, res.AchievedMPS, 2000*1.01)
			assert.InEpsilon(t, float64(res.Sent)/res.RunTime.Seconds(), res.AchievedMPS, 1e-9)
			// Every 10th message asks for a reply, which either arrives or,
			// if asked inside the window, counts as dropped (a lost one
			// outside the window is neither).
			warm := map[string]int64{"udp": 8}[network]
			asked := int64(pongsSent(uint64(warm+res.Sent), uint64(warm+1), 10))
			assert.InDelta(t, 100, asked, 1)
			assert.LessOrEqual(t, res.Received+res.Dropped, asked)
			require.NotNil(t, res.Raw)
			assert.Equal(t, res.Observations, res.Raw.Observations)
			assert.InDelta(t, 70, res.Observations+res.Dropped, 8)
			assert.GreaterOrEqual(t, usOf(res.Avg), usOf(res.Raw.Avg), "latency from the intended send time includes the waits for earlier writes")
			// The sender's own lateness is reported beside the round
			// trips, one value per measured message.
			require.NotNil(t, res.SendLateness)
			assert.Equal(t, res.Observations, res.SendLateness.Observations)
			if runtime.GOOS == "linux" {
				require.NotNil(t, res.ReceiveWake)
				assert.Equal(t, res.Observations, res.ReceiveWake.Observations)
				// The run's threads' CPU time is read (the sender
				// sleeps, but its sends cost something).
				assert.Positive(t, res.CPU)
			}
			assert.Equal(t, 2000, res.targetMPS)
			st := srv.Stats()
			// The server counts a reply before it writes it.
			assert.LessOrEqual(t, res.Received, st.Replies)
			if network == "tcp" {
				assert.Equal(t, int64(0), res.Dropped)
				assert.Equal(t, res.Received, st.Replies)
			} else {
				// Loopback UDP loses datagrams only when a socket buffer
				// overflows, as when a loaded machine starves one side:
				// every reply that did not arrive, dropped or outside the
				// window, is a message the server never got or a reply the
				// client never got (the warm-up messages are not in Sent).
				lost := (res.Sent + warm - st.Messages) + (st.Replies - res.Received)
				assert.LessOrEqual(t, asked-res.Received, lost)
			}
		})
	}
}

func TestPingPongCancel(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		for _, mode := range []time.Duration{0, time.Millisecond} {
			t.Run(network+"/"+modeName(mode), func(t *testing.T) {
				addr, srv := startServer(t, network, nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// Cancel once the server has seen the third message after
				// UDP's 8 warm-up ones: the client sends one only after the
				// previous reply (or its 1 s timeout), so round trips have
				// completed then, however slow the machine.
				warm := map[string]int64{"udp": 8}[network]
				var cancelled atomic.Int64
				go func() {
					defer cancel()
					for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
						if srv.Stats().Messages >= warm+3 {
							break
						}
						time.Sleep(time.Millisecond)
					}
					cancelled.Store(time.Now().UnixNano())
				}()
				start := time.Now()
				res, err := PingPong(ctx, addr, &PingPongConfig{Network: network, Spin: mode, Duration: time.Minute, WarmUp: -1})
				if mode > 0 && errors.Is(err, errors.ErrUnsupported) {
					return
				}
				require.ErrorIs(t, err, context.Canceled)
				require.NotNil(t, res)
				assert.Less(t, time.Since(time.Unix(0, cancelled.Load())), 5*time.Second)
				assert.Greater(t, res.Observations, int64(0))
				// The cancelled run still ends through the normal exit,
				// which times it.
				assert.Greater(t, res.RunTime.Seconds(), 0.0)
				assert.LessOrEqual(t, res.RunTime.Seconds(), time.Since(start).Seconds())
				assert.InDelta(t, res.RunTime.Seconds(), res.ValidTime.Seconds(), 1e-9, "no warm-up: the whole run is the window")
				assert.InDelta(t, float64(res.Sent)/res.RunTime.Seconds(), res.AchievedMPS, 1e-6)
				assert.Greater(t, res.AchievedMPS, 0.0)
			})
		}
	}
}

func TestPingPongCancelInWarmUp(t *testing.T) {
	// Cancelled inside a 30 s warm-up, once the server has answered a
	// measured message (after UDP's 8 warm-up ones): the run is timed,
	// but nothing falls in the measurement window.
	addr, srv := startServer(t, "udp", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
			if srv.Stats().Replies >= 1 {
				return
			}
		}
	}()
	res, err := PingPong(ctx, addr, &PingPongConfig{Duration: time.Minute, WarmUp: 30 * time.Second})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	assert.Greater(t, res.RunTime.Seconds(), 0.0)
	assert.Greater(t, res.AchievedMPS, 0.0)
	assert.Greater(t, res.Sent, int64(0))
	assert.Equal(t, 0.0, res.ValidTime.Seconds())
	assert.Equal(t, int64(0), res.Observations)
}

func TestPingPongInvalidConfig(t *testing.T) {
	for _, cfg := range []*PingPongConfig{
		{MessageSize: 13},
		{MessageSize: wire.MaxUDPMessageSize + 1},
		{Network: "sctp"},
		{MPS: -1},
		{Duration: 400 * time.Millisecond},
		{Duration: time.Second, WarmUp: time.Second, CoolDown: -1},
		{AdaptiveTimeout: true, MPS: 1000},
		{AdaptiveTimeout: true, ReadTimeout: time.Millisecond, MinReadTimeout: 2 * time.Millisecond},
		{MinReadTimeout: -1},
	} {
		_, err := PingPong(context.Background(), "127.0.0.1:1", cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
}

// One message a second, cancelled once the server has seen the first:
// the run returns without waiting out the gap to the next, having sent no
// more messages than were due by then.
func TestUnderLoadSlowRateCancels(t *testing.T) {
	addr, srv := startServer(t, "udp", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled atomic.Int64
	go func() {
		defer cancel()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
			if srv.Stats().Messages >= 8+1 { // UDP's warm-up messages, then the first
				break
			}
		}
		cancelled.Store(time.Now().UnixNano())
	}()
	res, err := PingPong(ctx, addr, &PingPongConfig{Duration: time.Minute, MPS: 1, ReplyEvery: 1, WarmUp: -1})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(time.Unix(0, cancelled.Load())), 3*time.Second, "a long gap between messages does not delay cancellation")
	assert.GreaterOrEqual(t, res.Sent, int64(1))
	assert.LessOrEqual(t, res.Sent, 1+int64(res.RunTime/time.Second), "one message per second: no more than were due")
	assert.Greater(t, res.RunTime.Seconds(), 0.0)
	assert.InDelta(t, 1/res.RunTime.Seconds(), res.AchievedMPS, 1e-6)
}

// silentPeer returns the address of a peer that takes messages and never
// answers: a UDP socket, or a TCP listener whose connections are accepted
// and never read.
func silentPeer(t *testing.T, network string) string {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { pc.Close() })
		return pc.LocalAddr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// watchedSilentPeer is a peer that never answers and says how far the
// client got: over UDP the datagrams it received; over TCP, with read,
// the bytes it read, without, the connections it accepted (it never reads
// them, so a large write blocks).
func watchedSilentPeer(t *testing.T, network string, read bool) (string, func() int64) {
	t.Helper()
	var seen atomic.Int64
	var wg sync.WaitGroup
	var closer io.Closer
	var addr string
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		closer, addr = pc, pc.LocalAddr().String()
		wg.Go(func() {
			buf := make([]byte, 1<<16)
			for {
				if _, _, err := pc.ReadFrom(buf); err != nil {
					return
				}
				seen.Add(1)
			}
		})
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closer, addr = ln, ln.Addr().String()
		wg.Go(func() {
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c)
				if !read {
					seen.Add(1)
					continue
				}
				wg.Go(func() {
					buf := make([]byte, 1<<16)
					for {
						n, err := c.Read(buf)
						if err != nil {
							return
						}
						seen.Add(int64(n))
					}
				})
			}
		})
	}
	t.Cleanup(func() { closer.Close(); wg.Wait() })
	return addr, seen.Load
}

// TestPingPongCancelEveryPhase cancels PingPong in each phase in which it
// can block, once the client has reached it (however slow the machine),
// and checks that it returns promptly with the partial result and
// ctx.Err(). The convention is 100 ms, measured by hand; the bound here, 5
// s, is against a hang, which a loaded machine under -race cannot be taken
// for (a spinning client beside two busy loops once took 1.3 s).
func TestPingPongCancelEveryPhase(t *testing.T) {
	cases := []struct {
		name, network string
		cfg           PingPongConfig
		silent        bool // peer never answers
		wantSent      bool // messages went out before the cancel
	}{
		{"udp/await reply", "udp", PingPongConfig{ReadTimeout: time.Minute}, true, true},
		{"tcp/await reply", "tcp", PingPongConfig{ReadTimeout: time.Minute}, true, true},
		{"udp/spin await reply", "udp", PingPongConfig{ReadTimeout: time.Minute, Spin: time.Millisecond}, true, true},
		{"tcp/spin await reply", "tcp", PingPongConfig{ReadTimeout: time.Minute, Spin: time.Millisecond}, true, true},
		{"udp/under-load gap", "udp", PingPongConfig{MPS: 1, ReplyEvery: 1, ReadTimeout: time.Minute}, true, true},
		// Whether the first 1 MiB write completes before the cancel depends
		// on how fast a loaded kernel moves it into the peer's buffers.
		{"tcp/under-load blocked write", "tcp", PingPongConfig{MPS: 100000, MessageSize: 1 << 20, ReadTimeout: time.Minute}, true, false},
		{"tcp/spin under-load blocked write", "tcp", PingPongConfig{MPS: 100000, MessageSize: 1 << 20, ReadTimeout: time.Minute, Spin: time.Millisecond}, true, false},
		{"udp/measuring", "udp", PingPongConfig{WarmUp: -1}, false, true},
		{"tcp/under-load measuring", "tcp", PingPongConfig{MPS: 1000, WarmUp: -1}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var addr string
			var srv *Server
			var seen func() int64
			if tc.silent {
				addr, seen = watchedSilentPeer(t, tc.network, tc.wantSent)
			} else {
				addr, srv = startServer(t, tc.network, nil)
			}
			cfg := tc.cfg
			cfg.Network, cfg.Duration = tc.network, time.Hour
			ctx, cancel := context.WithCancel(context.Background())
			type out struct {
				res *PingPongResult
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := PingPong(ctx, addr, &cfg)
				done <- out{res, err}
			}()
			if srv == nil {
				// The phase is reached: the first message went out (after
				// UDP's 8 warm-up datagrams; over TCP its 14-byte header
				// arrived), or, for a blocked write, the connection is up.
				want := int64(1)
				switch {
				case tc.network == "udp":
					want = 8 + 1
				case tc.wantSent:
					want = 14
				}
				for end := time.Now().Add(10 * time.Second); seen() < want && time.Now().Before(end); {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond) // into the wait
			} else {
				// Cancel once the server has answered twice, however slow
				// the machine (bounded).
				for end := time.Now().Add(10 * time.Second); srv.Stats().Replies < 2 && time.Now().Before(end); {
					time.Sleep(time.Millisecond)
				}
			}
			cancel()
			start := time.Now()
			var o out
			select {
			case o = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("PingPong did not return within 5 s of cancel")
			}
			t.Logf("returned %v after cancel", time.Since(start))
			if errors.Is(o.err, errors.ErrUnsupported) {
				t.Skip(o.err)
			}
			require.ErrorIs(t, o.err, context.Canceled)
			require.NotNil(t, o.res, "the partial result comes with ctx.Err()")
			if tc.wantSent {
				assert.Greater(t, o.res.Sent, int64(0))
			}
			if !tc.silent && cfg.MPS == 0 {
				// Ping-pong sends its third message only after the second
				// reply (or its timeout): round trips completed.
				assert.Greater(t, o.res.Observations, int64(0))
			}
			assert.LessOrEqual(t, o.res.Observations, o.res.Received)
			assert.Greater(t, o.res.RunTime.Seconds(), 0.0)
		})
	}
}

func TestPingPongCancelledBeforeDial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, network := range []string{"udp", "tcp"} {
		res, err := PingPong(ctx, silentPeer(t, network), &PingPongConfig{Network: network})
		require.ErrorIs(t, err, context.Canceled, network)
		require.NotNil(t, res, "an empty result comes with ctx.Err()")
		assert.Equal(t, network, res.Network)
		assert.Equal(t, int64(0), res.Sent)
	}
}

// Under load with Poisson arrivals: the number of messages follows the
// schedule's seeded process (about MPS x Duration), each reply is matched,
// and lateness is counted, not hidden.
func TestPingPongUnderLoadPoisson(t *testing.T) {
	addr, srv := startServer(t, "udp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{
		Duration: 500 * time.Millisecond, MPS: 2000, ReplyEvery: 10, Arrival: ArrivalPoisson,
		WarmUp: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	// 1,000 expected, standard deviation about 32.
	assert.InDelta(t, 1000, res.Sent, 160)
	// Every 10th asks for a reply, which arrives or, asked inside the
	// window, counts as dropped; one a loaded machine loses outside the
	// window (a socket buffer that overflowed) is neither, and is a
	// message the server never got or a reply the client never got.
	asked := int64(pongsSent(uint64(8+res.Sent), 9, 10))
	assert.LessOrEqual(t, res.Received+res.Dropped, asked)
	st := srv.Stats()
	lost := (res.Sent + 8 - st.Messages) + (st.Replies - res.Received)
	assert.LessOrEqual(t, asked-(res.Received+res.Dropped), lost)
	assert.LessOrEqual(t, res.Late, res.Sent)
	require.NotNil(t, res.Raw)
	assert.GreaterOrEqual(t, usOf(res.Avg), usOf(res.Raw.Avg))

	_, err = PingPong(context.Background(), addr, &PingPongConfig{MPS: 10, Arrival: 7})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

// The UDP warm-up burst stays within 64 KiB, so that large messages do not
// overflow the server's receive buffer and drop the first measured one.
func TestWarmUpShrinksWithMessageSize(t *testing.T) {
	for size, want := range map[int]int{14: 8, 8192: 8, 8193: 7, 16384: 4, 32000: 2, 65507: 1} {
		assert.Equal(t, want, warmUpCount(size), "size %d", size)
	}
	addr, srv := startServer(t, "udp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{Count: 1, MessageSize: 32000})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Sent)
	assert.Equal(t, int64(1+2), srv.Stats().Messages, "one message and two 32000-byte warm-up ones")
}

// A TCP under-load sender behind its schedule never waits for a send time,
// so it reads replies only while a write waits for the send buffer. Were it
// not to, a server echoing every large message would fill the client's
// receive buffer, block on its writes, stop reading, and leave the client's
// write waiting for its deadline.
func TestUnderLoadTCPReadsWhileWriting(t *testing.T) {
	addr, srv := startServer(t, "tcp", nil)
	res, err := PingPong(context.Background(), addr, &PingPongConfig{
		Network: "tcp", Duration: 300 * time.Millisecond, MPS: 100000, ReplyEvery: 1,
		MessageSize: 60000, WarmUp: -1, CoolDown: -1, ReadTimeout: 2 * time.Second, DiscardSamples: true,
	})
	require.NoError(t, err)
	assert.Positive(t, res.Sent)
	assert.Equal(t, srv.Stats().Replies, res.Received, "every reply the server wrote was read")
	assert.Zero(t, res.Dropped)
}

// modeName names a run's receive mode as PingPongResult's JSON "mode" does.
func modeName(spin time.Duration) string {
	if spin > 0 {
		return "spin"
	}
	return "default"
}
