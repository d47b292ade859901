package throughput

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRateWindow drives the window with interval byte counts, as the
// reporter does: nothing is judged before the window has passed, the
// average is over the last whole intervals (3.21's rounding), and only an
// average above the limit ends the test.
func TestRateWindow(t *testing.T) {
	const mb = 125_000 // bytes in one megabit
	sec := time.Second
	t.Run("five intervals of one second", func(t *testing.T) {
		w := newRateWindow(10e6, 5*sec, sec)
		for range 4 {
			require.NoError(t, w.add(100*mb, sec), "not judged before the window has passed")
		}
		err := w.add(0, sec) // 400 Mbit over 5 s: 80 Mbit/s
		require.ErrorIs(t, err, ErrTotalRate)
		assert.ErrorIs(t, err, ErrLimit)
		assert.Contains(t, err.Error(), "80000000 bits/s over the last 5s, limit 10000000 bits/s")
	})
	t.Run("the window slides", func(t *testing.T) {
		w := newRateWindow(10e6, 2*sec, sec)
		require.NoError(t, w.add(0, sec))
		require.NoError(t, w.add(20*mb, sec), "10 Mbit/s is not above 10 Mbit/s")
		require.ErrorIs(t, w.add(1*mb, sec), ErrTotalRate, "21 Mbit over the last 2 s")
		require.NoError(t, w.add(19*mb, sec), "the 20 Mbit interval has left the window")
	})
	t.Run("whole intervals, rounded", func(t *testing.T) {
		assert.Len(t, newRateWindow(1, 5*sec, 2*sec).bytes, 3, "2.5 rounds up, as C's round")
		assert.Len(t, newRateWindow(1, 5*sec, 3*sec).bytes, 2)
		assert.Len(t, newRateWindow(1, 500*time.Millisecond, sec).bytes, 1, "a window shorter than an interval is one interval")
		assert.Len(t, newRateWindow(1, 5*sec, 100*time.Millisecond).bytes, 50)
	})
	t.Run("measured lengths", func(t *testing.T) {
		// The interval cut at the end of the omit period is short: its
		// bytes are averaged over its own length, not a nominal second.
		w := newRateWindow(10e6, 2*sec, sec)
		require.NoError(t, w.add(1*mb, 200*time.Millisecond))
		require.NoError(t, w.add(10*mb, sec), "11 Mbit over 1.2 s is below 10 Mbit/s")
		require.ErrorIs(t, w.add(3*mb, 200*time.Millisecond), ErrTotalRate, "13 Mbit over 1.2 s is above (3.21's 2 nominal seconds would say 6.5 Mbit/s)")
	})
}

// TestPoliceEndsTestFromIntervalCounts runs the check where the server runs
// it, on the intervals the reporter cuts from the streams' counters: both
// directions count, and the engine ends with ErrTotalRate.
func TestPoliceEndsTestFromIntervalCounts(t *testing.T) {
	cfg := withDefaults((&Config{Interval: time.Second}))
	tr := newTestRun(&cfg, true)
	up, down := &flowStream{id: 1}, &flowStream{id: 2, send: true}
	for _, s := range []*flowStream{up, down} {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		s.conn = a
	}
	tr.eng.streams = []*flowStream{up, down}
	tr.limit = newRateWindow(16e6, 2*time.Second, time.Second) // 2 MB/s
	cut := func(i int, upBytes, downBytes int64) {
		up.bytes.Add(upBytes)
		down.bytes.Add(downBytes)
		iv := tr.cut(time.Duration(i)*time.Second, time.Duration(i+1)*time.Second, false)
		tr.police(&iv)
	}
	ended := func() bool {
		select {
		case <-tr.eng.done:
			return true
		default:
			return false
		}
	}
	cut(0, 1.5e6, 1.5e6) // 3 MB, but one interval of two
	require.False(t, ended())
	cut(1, 0.5e6, 0) // 3.5 MB over 2 s: 1.75 MB/s
	require.False(t, ended())
	cut(2, 1e6, 1.5e6) // 3 MB over 2 s: 1.5 MB/s each way, 12 Mbit/s in all
	require.False(t, ended(), "each direction alone is far below the limit")
	cut(3, 1e6, 1.5e6) // 5 MB over 2 s: 20 Mbit/s
	require.True(t, ended())
	assert.ErrorIs(t, tr.eng.failure(), ErrTotalRate)
}

// TestCheckParamsTotalRate: the refusal is on the rate times the streams,
// both directions for --bidir, as 3.21 computes it (not --fq-rate); no rate
// is let in, and no product wraps past the limit.
func TestCheckParamsTotalRate(t *testing.T) {
	sc, err := (&ServerConfig{MaxTotalBitrate: 100e6}).withDefaults()
	require.NoError(t, err)
	cases := []struct {
		name    string
		p       iperfwire.Params
		refused bool
	}{
		{"one stream within", iperfwire.Params{Parallel: 1, Bandwidth: 100e6}, false},
		{"one stream above", iperfwire.Params{Parallel: 1, Bandwidth: 100e6 + 1}, true},
		{"streams add up", iperfwire.Params{Parallel: 2, Bandwidth: 60e6}, true},
		{"reverse counts the same", iperfwire.Params{Parallel: 2, Bandwidth: 60e6, Reverse: true}, true},
		{"bidir doubles", iperfwire.Params{Parallel: 2, Bandwidth: 30e6, Bidirectional: true}, true},
		{"bidir within", iperfwire.Params{Parallel: 2, Bandwidth: 25e6, Bidirectional: true}, false},
		{"fq-rate is not counted, as by 3.21", iperfwire.Params{Parallel: 4, FQRate: 1 << 60}, false},
		{"no rate is let in", iperfwire.Params{Parallel: 128}, false},
		// Products that wrap to 0 or below in 64 bits, as 3.21's does.
		{"128 streams of 2^57 wrap to 0", iperfwire.Params{Parallel: 128, Bandwidth: 1 << 57}, true},
		{"64 bidir streams of 2^57 wrap to 0", iperfwire.Params{Parallel: 64, Bidirectional: true, Bandwidth: 1 << 57}, true},
		{"2 streams of 2^62 wrap negative", iperfwire.Params{Parallel: 2, Bandwidth: 1 << 62}, true},
		{"largest int64", iperfwire.Params{Parallel: 128, Bandwidth: math.MaxInt64}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Time = 1
			code, err := checkParams(&sc, &c.p)
			if !c.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrTotalRate)
			assert.Equal(t, iperfwire.IErrTotalRate, code)
		})
	}
	none, err := (&ServerConfig{}).withDefaults()
	require.NoError(t, err)
	_, err = checkParams(&none, &iperfwire.Params{Parallel: 128, Bandwidth: 1 << 57, Time: 1})
	assert.NoError(t, err, "no limit, no refusal")
}

func TestServerConfigTotalRate(t *testing.T) {
	d, err := (&ServerConfig{MaxTotalBitrate: 1e9}).withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, d.TotalBitrateWindow, "3.21's default")
	for _, w := range []time.Duration{100 * time.Millisecond, 60 * time.Second} {
		_, err := NewServer(&ServerConfig{MaxTotalBitrate: 1e9, TotalBitrateWindow: w})
		assert.NoError(t, err, "%v is within 3.21's bounds", w)
	}
	for _, c := range []ServerConfig{{TotalBitrateWindow: 99 * time.Millisecond}, {TotalBitrateWindow: 61 * time.Second},
		{TotalBitrateWindow: -time.Second}, {MaxTotalBitrate: -1}, {MaxTotalBitrate: math.NaN()}} {
		_, err := NewServer(&c)
		assert.Error(t, err, "%+v", c)
	}
}

func TestServerErrorTotalRate(t *testing.T) {
	var err error = &ServerError{IErrno: iperfwire.IErrTotalRate}
	assert.ErrorIs(t, err, ErrTotalRate)
	assert.ErrorIs(t, err, ErrServerError)
	assert.Contains(t, err.Error(), "total required bandwidth is larger than server limit")
	assert.NotErrorIs(t, &ServerError{IErrno: iperfwire.IErrDuration}, ErrTotalRate)
}

// TestServerTotalRate runs our client against our server with a total
// limit: a test that asks for too much is refused, one that asks for no
// rate is ended by the window once it passes, one within runs to its end.
func TestServerTotalRate(t *testing.T) {
	addr, srv, errs := hookedServer(t, ServerConfig{MaxTotalBitrate: 50e6, TotalBitrateWindow: 200 * time.Millisecond,
		Interval: 100 * time.Millisecond})
	ctx := ctxT(t, 60*time.Second)
	var se *ServerError

	_, err := Run(ctx, addr, &Config{Duration: time.Second, Bitrate: 30e6, Streams: 2})
	require.ErrorIs(t, err, ErrTotalRate)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, iperfwire.IErrTotalRate, se.IErrno)
	e := expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonLimit })
	assert.ErrorIs(t, e.Err, ErrTotalRate)
	assert.Contains(t, e.Err.Error(), "2 streams ask for 60000000 bits/s, limit 50000000 bits/s")

	start := time.Now()
	res, err := Run(ctx, addr, &Config{Duration: 20 * time.Second, Interval: -1})
	require.ErrorIs(t, err, ErrTotalRate, "unlimited loopback TCP goes far above 50 Mbit/s")
	assert.Less(t, time.Since(start), 10*time.Second, "ended by the window, not by the test's time")
	require.NotNil(t, res)
	e = expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonLimit })
	assert.ErrorIs(t, e.Err, ErrTotalRate)
	assert.Contains(t, e.Err.Error(), "over the last 200ms, limit 50000000 bits/s")

	// A client asking for 60 s intervals (sent with get_server_output)
	// does not stretch the window: the server polices on its own.
	start = time.Now()
	_, err = Run(ctx, addr, &Config{Duration: 20 * time.Second, Interval: 60 * time.Second, GetServerOutput: true})
	require.ErrorIs(t, err, ErrTotalRate)
	assert.Less(t, time.Since(start), 10*time.Second, "ended by the server's window, not by the test's time")
	expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonLimit })

	res, err = Run(ctx, addr, &Config{Duration: time.Second, Bitrate: 2e6, BlockLen: 16 << 10, Bidir: true})
	require.NoError(t, err, "4 Mbit/s in all is within the limit")
	require.NotNil(t, res.Upload)
	assert.Equal(t, int64(3), srv.Stats().Failed[reasonLimit])
	assert.False(t, errors.Is(err, ErrTotalRate))
}

// TestServerTotalRateAfterSourceEnds: a server's source that has ended (its
// -F file sent) ends no test, the client does, so the limit still polices
// the upload that goes on.
func TestServerTotalRateAfterSourceEnds(t *testing.T) {
	addr, _, errs := hookedServer(t, ServerConfig{MaxTotalBitrate: 50e6, TotalBitrateWindow: 200 * time.Millisecond,
		Interval: 100 * time.Millisecond,
		SendFrom: func(int) (io.Reader, error) { return bytes.NewReader(make([]byte, 1024)), nil }})
	start := time.Now()
	_, err := Run(ctxT(t, 60*time.Second), addr, &Config{Duration: 20 * time.Second, Bidir: true, Interval: -1})
	require.ErrorIs(t, err, ErrTotalRate, "unlimited loopback TCP goes far above 50 Mbit/s")
	assert.Less(t, time.Since(start), 10*time.Second, "ended by the window, not by the test's time")
	e := expectFailure(t, errs, func(e *SessionError) bool { return e.Reason == reasonLimit })
	assert.ErrorIs(t, e.Err, ErrTotalRate)
}
