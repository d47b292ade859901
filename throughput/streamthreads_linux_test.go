package throughput

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestStreamThreadsOwnPeers runs our client against our server with stream
// threads on both sides: every byte sent is counted, GOMAXPROCS is raised
// by the TCP streams of both sides while the test runs (sendfile senders
// included; UDP streams keep their own path), and is back after.
func TestStreamThreadsOwnPeers(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	addr, results := startServer(t, &ServerConfig{SocketOptions: SocketOptions{StreamThreads: true}})
	for name, tc := range map[string]struct {
		cfg     Config
		threads int // threaded TCP streams of both sides
	}{
		"upload-4":      {Config{Streams: 4}, 8},
		"upload-skip":   {Config{Streams: 2, SocketOptions: SocketOptions{SkipRxCopy: true}}, 4},
		"upload-paced":  {Config{Streams: 2, Bitrate: 200e6}, 4},
		"zerocopy-2":    {Config{Streams: 2, SocketOptions: SocketOptions{ZeroCopy: true}}, 4},
		"reverse-2":     {Config{Streams: 2, Reverse: true}, 4},
		"reverse-blk1k": {Config{Reverse: true, BlockLen: 1000}, 2},
		"bidir":         {Config{Bidir: true}, 4},
		"udp":           {Config{UDP: true, Bitrate: 50e6}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			var most atomic.Int64
			cfg := tc.cfg
			cfg.Duration, cfg.Interval, cfg.StreamThreads = 600*time.Millisecond, 100*time.Millisecond, true
			cfg.OnInterval = func(Interval) {
				if n := int64(runtime.GOMAXPROCS(0)); n > most.Load() {
					most.Store(n)
				}
			}
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			srv := <-results
			assert.Equal(t, int64(base+tc.threads), most.Load(), "GOMAXPROCS while the test ran")
			assert.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == base }, 5*time.Second, time.Millisecond,
				"GOMAXPROCS is back once the threads end")
			// How much a 600 ms test moves is the loaded machine's
			// business (it may hold loopback data back for all of it);
			// the counts must agree.
			if up := res.Upload; up != nil && !cfg.UDP {
				assert.Equal(t, up.Sent.Bytes, up.Received.Bytes, "every byte sent is counted, the tail too")
			}
			if down := res.Download; down != nil {
				assert.LessOrEqual(t, down.Received.Bytes, down.Sent.Bytes)
			}
			// Each stream's addresses, on both sides (a thread's socket
			// keeps them; a server's UDP stream is connected by connect(2)).
			require.Len(t, srv.Streams, len(res.Streams))
			for i, st := range res.Streams {
				require.NotEmpty(t, st.LocalAddr)
				assert.Equal(t, st.LocalAddr, srv.Streams[i].RemoteAddr, "stream %d", st.ID)
				assert.Equal(t, st.RemoteAddr, srv.Streams[i].LocalAddr, "stream %d", st.ID)
			}
			// Each side's sending streams carry their socket's TCP_INFO.
			for side, r := range map[string]*Result{"client": res, "server": srv} {
				for _, st := range r.Streams {
					if cfg.UDP {
						continue
					}
					if sent := st.Reverse == (side == "server"); sent {
						require.NotNil(t, st.TCP, "%s stream %d: TCP_INFO of a thread's socket", side, st.ID)
						assert.Positive(t, st.TCP.SndCwndBytes)
					}
				}
			}
			if rate := cfg.Bitrate * float64(cfg.Streams); rate > 0 && !cfg.UDP {
				// Unpaced, these streams send tens of Gbit/s.
				assert.Less(t, res.Upload.Sent.BitsPerSecond, 1.5*rate, "paced streams keep their rate on threads")
			}
		})
	}
}

// TestReadThreadWake reads a blocking duplicate directly: an idle read
// times out (the thread can look at the stop flag), data is read, and wake
// ends a sleeping read at once with end of stream.
func TestReadThreadWake(t *testing.T) {
	a, b := tcpPair(t)
	rt := newStreamThread(a, false)
	require.NotNil(t, rt)
	defer rt.Close()
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
	r := untilWake(t, "read", got, rt.wake)
	assert.Equal(t, result{0, 0}, r, "wake ends the read with end of stream")
	_ = rt.Close()
	rt.wake() // after close: a no-op, never a stray shutdown of a reused descriptor
}

// untilWake checks that got stays empty for two thread slices (a sleeping
// read or write does not come back by itself), then wakes it and returns
// what it gives.
func untilWake[T any](t *testing.T, what string, got <-chan T, wake func()) T {
	t.Helper()
	time.Sleep(2 * threadSlice)
	select {
	case r := <-got:
		t.Fatalf("%s returned %+v before wake", what, r)
	default:
	}
	wake()
	return <-got
}

// TestStreamThreadWrite sends on a blocking duplicate directly, from
// memory (sendto) and from the block's file (sendfile, for ZeroCopy): all
// of a block goes out, byte for byte, while the peer reads; with a peer
// that stops reading the send gives up when told to stop, or when nothing
// went out for the timeout, saying how much it sent; wake ends a blocked
// send at once, and a closed peer is an error, not a signal.
func TestStreamThreadWrite(t *testing.T) {
	for name, from := range map[string]func(*testing.T, *streamThread, []byte) blockSend{
		"sendto": func(_ *testing.T, wt *streamThread, b []byte) blockSend { return wt.sendto(b) },
		"sendfile": func(t *testing.T, wt *streamThread, b []byte) blockSend {
			f, err := payloadFile(b)
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			return wt.sendfileAt(f, 0, len(b))
		},
	} {
		t.Run(name, func(t *testing.T) { testThreadSend(t, from) })
	}
}

func testThreadSend(t *testing.T, from func(*testing.T, *streamThread, []byte) blockSend) {
	a, b := tcpPair(t)
	wt := newStreamThread(a, true)
	require.NotNil(t, wt)
	defer wt.Close()
	var stop atomic.Bool
	block := make([]byte, 4<<20)
	fillPayload(block)
	send := from(t, wt, block)

	stop.Store(true)
	n, err := wt.writeAll(send, &stop, time.Minute)
	assert.ErrorIs(t, err, errStopWrite)
	assert.Zero(t, n, "nothing is sent once the test stops, room or not")
	stop.Store(false)

	read := make(chan []byte, 1)
	go func() {
		got := make([]byte, len(block))
		n, _ := io.ReadFull(b, got)
		read <- got[:n]
	}()
	n, err = wt.writeAll(send, &stop, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, len(block), n)
	assert.True(t, bytes.Equal(block, <-read), "the peer got every byte, in order")

	// Nobody reads b now: the socket buffers (at most some MiB) fill and
	// the send sleeps.
	send = from(t, wt, make([]byte, 64<<20))
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	write := func(timeout time.Duration) {
		n, err := wt.writeAll(send, &stop, timeout)
		got <- result{n, err}
	}
	go write(time.Minute)
	time.Sleep(3 * threadSlice)
	stop.Store(true)
	r := <-got
	require.ErrorIs(t, r.err, errStopWrite)
	assert.Less(t, r.n, send.len, "a stopped send says how much went out")

	// The kernel may still open some room after the stop (the peer's
	// window grows, a delayed ACK lands): such a send takes it and then
	// times out. Once the buffers are full, a send takes nothing.
	stop.Store(false)
	for range 20 {
		go write(3 * threadSlice)
		r = <-got
		require.ErrorIs(t, r.err, os.ErrDeadlineExceeded, "no room for the timeout")
		require.Less(t, r.n, send.len)
		if r.n == 0 {
			break
		}
	}
	assert.Zero(t, r.n, "a send into full buffers takes nothing before it times out")

	go write(time.Minute)
	r = untilWake(t, "send", got, wt.wake)
	assert.ErrorIs(t, r.err, unix.EPIPE, "wake shuts the write side")

	c, d := tcpPair(t)
	wt2 := newStreamThread(c, true)
	require.NotNil(t, wt2)
	defer wt2.Close()
	require.NoError(t, d.Close())
	send = from(t, wt2, block[:64<<10])
	for range 100 { // the first sends after the close may still be taken
		if _, err = wt2.writeAll(send, &stop, time.Minute); err != nil {
			break
		}
	}
	var errno unix.Errno
	require.ErrorAs(t, err, &errno, "a closed peer")
	assert.Contains(t, []unix.Errno{unix.EPIPE, unix.ECONNRESET}, errno)
	assert.Contains(t, err.Error(), "write tcp "+c.LocalAddr().String()+"->", "named as a write through the poller is")
}

// TestPayloadFile: the block's file for sendfile holds the block, in an
// unnamed file of the temporary directory, or in memory where that
// directory is missing.
func TestPayloadFile(t *testing.T) {
	block := make([]byte, 128<<10)
	fillPayload(block)
	for name, dir := range map[string]string{"tmpdir": t.TempDir(), "missing-dir": filepath.Join(t.TempDir(), "gone")} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("TMPDIR", dir)
			f, err := payloadFile(block)
			require.NoError(t, err)
			defer f.Close()
			got := make([]byte, len(block)+1)
			n, err := f.ReadAt(got, 0)
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, block, got[:n], "the file holds the block and nothing else")
			link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
			require.NoError(t, err)
			if name == "tmpdir" {
				if fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR, 0o600); err != nil {
					t.Skipf("%s cannot hold an unnamed file (%v): the memfd case covers the rest", dir, err)
				} else {
					_ = unix.Close(fd)
				}
				assert.True(t, strings.HasPrefix(link, dir+"/"), "%s: an unnamed file in TMPDIR", link)
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				assert.Empty(t, entries, "the file has no name to leave behind")
			} else {
				assert.True(t, strings.HasPrefix(link, "/memfd:"), "%s: a memfd", link)
			}
		})
	}
}

// TestStreamThreadConn: a stream thread takes its socket over from the
// poller (the old conn is closed, the connection is not) and is the
// stream's net.Conn from then on: data both ways, TCP_INFO and socket
// options through Control, and one Close.
func TestStreamThreadConn(t *testing.T) {
	a, b := tcpPair(t)
	st := newStreamThread(a, false)
	require.NotNil(t, st)
	var c net.Conn = st
	_, err := a.Write([]byte("x"))
	assert.ErrorIs(t, err, net.ErrClosed, "the poller's conn is closed")
	assert.Equal(t, a.LocalAddr(), c.LocalAddr())
	assert.Equal(t, a.RemoteAddr(), c.RemoteAddr())

	_, err = b.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(buf[:n]))
	n, err = c.Write([]byte("pong"))
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = io.ReadFull(b, buf[:4])
	require.NoError(t, err)
	assert.Equal(t, "pong", string(buf[:n]))

	ti, err := readTCPInfo(c)
	require.NoError(t, err)
	assert.Positive(t, ti.RTTUs, "TCP_INFO of the same socket")
	require.NoError(t, setRcvLowat(st, 1000))
	assert.NoError(t, c.SetDeadline(time.Now()), "deadlines are the thread's business")

	require.NoError(t, b.Close())
	_, err = c.Read(buf)
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Close(), net.ErrClosed)
	_, err = readTCPInfo(c)
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.ErrorIs(t, setRcvLowat(st, 1), net.ErrClosed)
}

// TestStalledPeerEndsTheSend: a peer that stops reading ends a sending
// stream with a timeout after IOTimeout, through the poller (the write
// deadline) and on a stream thread (writeAll's own clock) alike, from
// memory or with sendfile (ZeroCopy), and the bytes written before it are
// counted.
func TestStalledPeerEndsTheSend(t *testing.T) {
	for _, tc := range []struct {
		name              string
		threads, zerocopy bool
	}{{"poller", false, false}, {"threads", true, false}, {"poller-zerocopy", false, true}, {"threads-zerocopy", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := tcpPair(t) // nobody reads the other end
			cfg := withDefaults((&Config{IOTimeout: 300 * time.Millisecond, Duration: time.Minute, SocketOptions: SocketOptions{StreamThreads: tc.threads, ZeroCopy: tc.zerocopy}}))
			e := newEngine(&cfg, false)
			s := &flowStream{conn: a, send: true}
			e.streams = []*flowStream{s}
			e.startThreads()
			assert.Equal(t, tc.threads, threadOf(s.conn) != nil)
			e.counting.Store(true)
			err := e.sendTCP(s)
			require.Error(t, err)
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
			assert.True(t, isTimeout(err), "a net.Error timeout, as the session reports it")
			assert.Positive(t, s.bytes.Load(), "what went out before the stall is counted")
			_ = s.conn.Close()
		})
	}
}

// TestLendPs lends Ps up to maxStreamThreads and puts GOMAXPROCS back after
// the last one returns; an engine that gets none reads through the poller.
func TestLendPs(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	require.Equal(t, maxStreamThreads, lendPs(maxStreamThreads+5))
	assert.Equal(t, base+maxStreamThreads, runtime.GOMAXPROCS(0))
	assert.Zero(t, lendPs(1), "no more than maxStreamThreads at once")

	a, _ := tcpPair(t)
	e := newEngine(&Config{SocketOptions: SocketOptions{StreamThreads: true}}, false)
	e.streams = []*flowStream{{conn: a}}
	e.startThreads()
	assert.Nil(t, threadOf(e.streams[0].conn), "without a P to lend, the stream reads through the poller")

	for range maxStreamThreads {
		returnP()
	}
	assert.Equal(t, base, runtime.GOMAXPROCS(0))

	e.startThreads()
	require.NotNil(t, threadOf(e.streams[0].conn))
	assert.Equal(t, base+1, runtime.GOMAXPROCS(0))
	_ = e.streams[0].conn.Close()
	returnP()
	assert.Equal(t, base, runtime.GOMAXPROCS(0))
}
