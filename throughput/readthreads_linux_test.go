package throughput

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadThreadsOwnPeers runs our client against our server with read
// threads on both sides: every byte sent is counted, GOMAXPROCS is raised
// by the receiving TCP streams while the test runs, and is back after.
func TestReadThreadsOwnPeers(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	addr, results := startServer(t, &ServerConfig{ReadThreads: true})
	for name, tc := range map[string]struct {
		cfg       Config
		receivers int // receiving TCP streams of both sides
	}{
		"upload-4":    {Config{Streams: 4}, 4},
		"upload-skip": {Config{Streams: 2, SkipRxCopy: true}, 2},
		"reverse-2":   {Config{Streams: 2, Reverse: true}, 2},
		"bidir":       {Config{Bidir: true}, 2},
		"udp":         {Config{UDP: true, Bitrate: 50e6}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			var most atomic.Int64
			cfg := tc.cfg
			cfg.Duration, cfg.Interval, cfg.ReadThreads = 600*time.Millisecond, 100*time.Millisecond, true
			cfg.OnInterval = func(Interval) {
				if n := int64(runtime.GOMAXPROCS(0)); n > most.Load() {
					most.Store(n)
				}
			}
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			<-results
			assert.Equal(t, int64(base+tc.receivers), most.Load(), "GOMAXPROCS while the test ran")
			assert.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == base }, 5*time.Second, time.Millisecond,
				"GOMAXPROCS is back once the threads end")
			if up := res.Upload; up != nil && !cfg.UDP {
				assert.Equal(t, up.Sent.Bytes, up.Received.Bytes, "every byte sent is counted, the tail too")
				assert.Positive(t, up.Received.Bytes)
			}
			if down := res.Download; down != nil {
				assert.Positive(t, down.Received.Bytes)
				assert.LessOrEqual(t, down.Received.Bytes, down.Sent.Bytes)
			}
		})
	}
}

// TestReadThreadWake reads a blocking duplicate directly: an idle read
// times out (the thread can look at the stop flag), data is read, and wake
// ends a sleeping read at once with end of stream.
func TestReadThreadWake(t *testing.T) {
	a, b := tcpPair(t)
	rt := newReadThread(a)
	require.NotNil(t, rt)
	defer rt.close()
	buf := make([]byte, 64)
	// read is rt.read made again after a signal (the runtime's preemption
	// requests), as recvThread does.
	read := func(trunc bool) (int, unix.Errno) {
		for {
			if n, errno := rt.read(buf, trunc); errno != unix.EINTR {
				return n, errno
			}
		}
	}
	idle := func() bool {
		_, errno := rt.read(buf, false)
		return errno == unix.EAGAIN || errno == unix.EINTR
	}

	assert.True(t, idle(), "an idle read comes back (after threadSlice or a signal)")

	_, err := b.Write([]byte("hello"))
	require.NoError(t, err)
	n, errno := read(false)
	require.Zero(t, errno)
	assert.Equal(t, "hello", string(buf[:n]))

	_, err = b.Write([]byte("truncated"))
	require.NoError(t, err)
	n, errno = read(true)
	require.Zero(t, errno)
	assert.Equal(t, 9, n, "MSG_TRUNC consumes the bytes")
	assert.Equal(t, "hello", string(buf[:5]), "and copies none")

	type result struct {
		n     int
		errno unix.Errno
	}
	got := make(chan result, 1)
	go func() {
		for {
			if n, errno := rt.read(buf, false); errno != unix.EAGAIN && errno != unix.EINTR {
				got <- result{n, errno}
				return
			}
		}
	}()
	time.Sleep(2 * threadSlice)
	select {
	case r := <-got:
		t.Fatalf("read returned %+v before wake", r)
	default:
	}
	rt.wake()
	r := <-got
	assert.Equal(t, result{0, 0}, r, "wake ends the read with end of stream")
	rt.close()
	rt.wake() // after close: a no-op, never a stray shutdown of a reused descriptor
}

// TestLendPs lends Ps up to maxReadThreads and puts GOMAXPROCS back after
// the last one returns; an engine that gets none reads through the poller.
func TestLendPs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	require.Equal(t, maxReadThreads, lendPs(maxReadThreads+5))
	assert.Equal(t, base+maxReadThreads, runtime.GOMAXPROCS(0))
	assert.Zero(t, lendPs(1), "no more than maxReadThreads at once")

	a, _ := tcpPair(t)
	e := newEngine(&Config{ReadThreads: true}, false)
	e.streams = []*flowStream{{conn: a}}
	e.startThreads()
	assert.Nil(t, e.streams[0].rt, "without a P to lend, the stream reads through the poller")

	for range maxReadThreads {
		returnP()
	}
	assert.Equal(t, base, runtime.GOMAXPROCS(0))

	e.startThreads()
	require.NotNil(t, e.streams[0].rt)
	assert.Equal(t, base+1, runtime.GOMAXPROCS(0))
	e.streams[0].rt.close()
	returnP()
	assert.Equal(t, base, runtime.GOMAXPROCS(0))
}
