package throughput

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func rcvLowat(t *testing.T, l *lowat) int {
	t.Helper()
	rc, err := l.conn.SyscallConn()
	require.NoError(t, err)
	var v int
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT) }))
	require.NoError(t, gerr)
	return v
}

// TestLowatFollowsRate drives the threshold with a made-up clock and checks
// what the kernel holds: 1 ms of the rate, at most 128 KiB, back to one
// byte when the rate falls or the test ends, and off for paced streams and
// fixed windows.
func TestLowatFollowsRate(t *testing.T) {
	a, _ := tcpPair(t)
	var off atomic.Bool
	unlimited := withDefaults((&Config{}))
	l := newLowat(a, &unlimited, &off)
	require.True(t, l.enabled)
	t0 := time.Unix(1000, 0)
	l.adapt(t0, 0)
	l.adapt(t0.Add(5*time.Millisecond), 1<<30) // too soon to measure
	assert.Equal(t, 1, rcvLowat(t, l))
	l.adapt(t0.Add(10*time.Millisecond), 10<<20) // 1 GB/s: 1 ms is 1 MB, capped
	assert.Equal(t, maxLowat, rcvLowat(t, l))
	l.adapt(t0.Add(20*time.Millisecond), 10<<20+40<<10) // 4 MB/s: 4 KB per ms
	assert.Equal(t, 4096, rcvLowat(t, l))
	l.adapt(t0.Add(time.Second), 10<<20+41<<10) // nearly stopped
	assert.Equal(t, 1, rcvLowat(t, l))
	l.adapt(t0.Add(time.Second+10*time.Millisecond), 20<<20)
	require.Equal(t, maxLowat, rcvLowat(t, l))

	// The end of the test puts it back and keeps it there.
	e := &engine{streams: []*flowStream{{conn: a}}}
	e.endLowat()
	assert.Equal(t, 1, rcvLowat(t, l))
	l.off = &e.lowatOff
	l.adapt(t0.Add(2*time.Second), 30<<20)
	assert.Equal(t, 1, rcvLowat(t, l))

	paced := withDefaults((&Config{Bitrate: 1e9}))
	assert.False(t, newLowat(a, &paced, &off).enabled, "a paced sender's data is never held back")
	window := withDefaults((&Config{SocketOptions: SocketOptions{Window: 64 << 10}}))
	assert.False(t, newLowat(a, &window, &off).enabled, "a fixed window may be smaller than the threshold")
}

// TestLowatEndReadsTheTail sends a fast stream, then a small tail and
// nothing more: the raised threshold holds the tail back, and ending the
// test (endLowat) gets it read and counted.
func TestLowatEndReadsTheTail(t *testing.T) {
	a, b := tcpPair(t)
	cfg := withDefaults((&Config{IOTimeout: time.Hour}))
	e := newEngine(&cfg, false)
	s := &flowStream{conn: a}
	e.streams = []*flowStream{s}
	e.counting.Store(true)
	done := make(chan error, 1)
	go func() { done <- e.recvTCP(s) }()
	defer func() {
		e.stop()
		require.NoError(t, <-done)
	}()
	block := make([]byte, 1<<20)
	var sent int64
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		n, err := b.Write(block)
		require.NoError(t, err)
		sent += int64(n)
	}
	// The bulk's own last bytes may already sit below the threshold: let
	// the reader settle, then add a tail that keeps the queue under it.
	settled := func() int64 {
		for prev := int64(-1); ; time.Sleep(50 * time.Millisecond) {
			if n := s.bytes.Load(); n == prev {
				return n
			}
			prev = s.bytes.Load()
		}
	}
	queued := sent - settled()
	l := &lowat{conn: a.(*net.TCPConn)}
	threshold := int64(rcvLowat(t, l))
	require.Greater(t, threshold, queued+1, "the fast stream raised the threshold")
	n, err := b.Write(block[:(threshold-queued)/2])
	require.NoError(t, err)
	sent += int64(n)
	time.Sleep(300 * time.Millisecond)
	held := sent - s.bytes.Load()
	t.Logf("sent %d bytes; %d not yet read after 300 ms", sent, held)
	assert.Positive(t, held, "the threshold holds the tail back (the setting took effect)")
	e.endLowat()
	assert.Eventually(t, func() bool { return s.bytes.Load() == sent }, 10*time.Second, 5*time.Millisecond,
		"the tail is read once the test ends")
}
