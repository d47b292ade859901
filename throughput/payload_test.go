package throughput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomData is n reproducible random bytes: a payload no pattern of ours
// could pass for.
func randomData(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// dataFile writes b to a file in a test's temporary directory.
func dataFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.bin")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// fromFile is a SendFrom that opens path for every stream.
func fromFile(path string) func(int) (io.Reader, error) {
	return func(int) (io.Reader, error) { return os.Open(path) }
}

// fromMemory is a SendFrom that gives every stream b.
func fromMemory(b []byte) func(int) (io.Reader, error) {
	return func(int) (io.Reader, error) { return bytes.NewReader(b), nil }
}

// streamSinks collects what each receiving stream writes (ReceiveTo).
type streamSinks struct {
	mu  sync.Mutex
	got map[int]*bytes.Buffer
}

func (k *streamSinks) open(id int) (io.Writer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.got == nil {
		k.got = map[int]*bytes.Buffer{}
	}
	k.got[id] = &bytes.Buffer{}
	return k.got[id], nil
}

// streams returns what each stream received, once the test is over.
func (k *streamSinks) streams() map[int][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[int][]byte{}
	for id, b := range k.got {
		out[id] = b.Bytes()
	}
	return out
}

// serverResult waits for the server's view of the test that just ended.
func serverResult(t *testing.T, results <-chan *Result) *Result {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("no server result")
		return nil
	}
}

// TestSendFromToServerSink sends a few MB of random data from our client
// to our server's sink and checks every byte arrived, in order, on the
// poller, on stream threads, and with sendfile from the file itself. The
// test has no duration: it ends when the data is sent.
func TestSendFromToServerSink(t *testing.T) {
	data := randomData(3_000_017, 1) // a short last block
	path := dataFile(t, data)
	for _, tc := range []struct {
		name    string
		cfg     Config
		threads bool // the server's
	}{
		{"poller", Config{SendFrom: fromMemory(data)}, false},
		{"threads", Config{SendFrom: fromMemory(data), BlockLen: 128 << 10, SocketOptions: SocketOptions{StreamThreads: true}}, true},
		{"zerocopy file", Config{SendFrom: fromFile(path), SocketOptions: SocketOptions{ZeroCopy: true}}, false},
		{"zerocopy file threads", Config{SendFrom: fromFile(path), SocketOptions: SocketOptions{ZeroCopy: true, StreamThreads: true}}, true},
		{"file copied", Config{SendFrom: fromFile(path), Streams: 2, SocketOptions: SocketOptions{StreamThreads: true}}, false},
		{"long duration", Config{SendFrom: fromMemory(data), Duration: time.Minute}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sinks streamSinks
			addr, results := startServer(t, &ServerConfig{ReceiveTo: sinks.open, SocketOptions: SocketOptions{StreamThreads: tc.threads}})
			begin := time.Now()
			res, err := Run(ctxT(t, 30*time.Second), addr, &tc.cfg)
			require.NoError(t, err)
			assert.Less(t, time.Since(begin), 20*time.Second, "the test ends when its data is sent")
			srv := serverResult(t, results)
			n := len(res.Streams)
			require.Equal(t, max(tc.cfg.Streams, 1), n)
			assert.Equal(t, int64(n*len(data)), res.Upload.Sent.Bytes, "the bytes reported are those sent")
			assert.Equal(t, int64(n*len(data)), srv.Upload.Received.Bytes)
			got := sinks.streams()
			require.Len(t, got, n)
			for id, b := range got {
				assert.True(t, bytes.Equal(data, b), "stream %d: %d bytes of %d, equal prefix %v", id, len(b), len(data), bytes.HasPrefix(data, b))
			}
			assert.Empty(t, res.Notes)
		})
	}
}

// TestReceiveToFromServerSource downloads a file from our server's source
// into our client's sink (iperf3 -R -F), through the poller, stream
// threads and the server's sendfile from the file.
func TestReceiveToFromServerSource(t *testing.T) {
	data := randomData(2_500_001, 2)
	path := dataFile(t, data)
	for _, tc := range []struct {
		name    string
		cfg     Config
		threads bool
	}{
		{"poller", Config{}, false},
		{"threads", Config{SocketOptions: SocketOptions{StreamThreads: true}}, true},
		{"server sendfile", Config{SocketOptions: SocketOptions{ZeroCopy: true}}, false},
		{"server sendfile threads", Config{SocketOptions: SocketOptions{ZeroCopy: true, StreamThreads: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, results := startServer(t, &ServerConfig{SendFrom: fromFile(path), SocketOptions: SocketOptions{StreamThreads: tc.threads}})
			out := filepath.Join(t.TempDir(), "out.bin")
			cfg := tc.cfg
			cfg.Reverse, cfg.Bytes = true, int64(len(data))
			cfg.ReceiveTo = func(int) (io.Writer, error) { return os.Create(out) }
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			srv := serverResult(t, results)
			assert.Equal(t, int64(len(data)), res.Download.Received.Bytes)
			assert.Equal(t, int64(len(data)), srv.Download.Sent.Bytes)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, got), "%d bytes of %d", len(got), len(data))
		})
	}
}

// TestSendFromStreams gives each stream data of its own and checks each
// arrived on its stream, in both directions of a bidirectional test. The
// client's data ending ends the test, as in iperf3, so the download has
// delivered a first part of the server's data, each byte in its place.
func TestSendFromStreams(t *testing.T) {
	parts := map[int][]byte{}
	for id := range 10 {
		parts[id] = randomData(300_000+id, uint64(id))
	}
	from := func(id int) (io.Reader, error) { return bytes.NewReader(parts[id]), nil }
	var ours, theirs streamSinks
	addr, results := startServer(t, &ServerConfig{SendFrom: from, ReceiveTo: theirs.open})
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Bidir: true, Streams: 2, SendFrom: from, ReceiveTo: ours.open, BlockLen: 64 << 10})
	require.NoError(t, err)
	serverResult(t, results)
	up, down := theirs.streams(), ours.streams()
	assert.Len(t, up, 2)
	assert.Len(t, down, 2)
	for id, b := range up {
		assert.True(t, bytes.Equal(parts[id], b), "upload stream %d: %d bytes of %d", id, len(b), len(parts[id]))
	}
	var downloaded int
	for id, b := range down {
		assert.True(t, bytes.HasPrefix(parts[id], b), "download stream %d: %d bytes", id, len(b))
		downloaded += len(b)
	}
	assert.Equal(t, int64(len(parts[1])+len(parts[3])), res.Upload.Sent.Bytes)
	assert.GreaterOrEqual(t, int64(downloaded), res.Download.Received.Bytes)
}

// TestSendFromBytesLimit stops at -n before the data's end: the receiver
// gets exactly the bytes the result reports sent, the data's first ones.
func TestSendFromBytesLimit(t *testing.T) {
	data := randomData(3<<20, 3)
	var sinks streamSinks
	addr, results := startServer(t, &ServerConfig{ReceiveTo: sinks.open})
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{SendFrom: fromMemory(data), Bytes: 1 << 20, BlockLen: 100_000})
	require.NoError(t, err)
	serverResult(t, results)
	got := sinks.streams()[1]
	assert.Equal(t, int64(11*100_000), res.Upload.Sent.Bytes, "whole blocks up to the count")
	assert.Len(t, got, 11*100_000)
	assert.True(t, bytes.HasPrefix(data, got))
}

// failingWriter fails once it has taken more than limit bytes, and its Close
// returns closeErr.
type failingWriter struct {
	limit    int
	n        int
	err      error
	closeErr error
	closed   bool
}

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.n+len(b) > w.limit {
		return 0, w.err
	}
	w.n += len(b)
	return len(b), nil
}

func (w *failingWriter) Close() error {
	w.closed = true
	return w.closeErr
}

// TestReceiveToErrors: a sink's write error ends the test at once with that
// error, and so does one from closing it after a test that went well.
func TestReceiveToErrors(t *testing.T) {
	addr, _ := startServer(t, nil)
	errDisk := errors.New("disk full")
	w := &failingWriter{limit: 1 << 20, err: errDisk}
	begin := time.Now()
	_, err := Run(ctxT(t, 60*time.Second), addr, &Config{Reverse: true, Duration: 30 * time.Second,
		ReceiveTo: func(int) (io.Writer, error) { return w, nil }})
	require.ErrorIs(t, err, errDisk)
	assert.Contains(t, err.Error(), "stream 1: receive to: disk full")
	assert.Less(t, time.Since(begin), 20*time.Second, "the write error ends the 30 s test")
	assert.True(t, w.closed)

	errClose := errors.New("close failed")
	w = &failingWriter{limit: 1 << 40, closeErr: errClose}
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Reverse: true, Bytes: 1 << 20,
		ReceiveTo: func(int) (io.Writer, error) { return w, nil }})
	require.ErrorIs(t, err, errClose)
	require.NotNil(t, res.Download, "the test ran to its end")
	assert.GreaterOrEqual(t, int64(w.n), res.Download.Received.Bytes)
}

// errReader returns n bytes of zeros, then err.
type errReader struct {
	n   int
	err error
}

func (r *errReader) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := min(len(b), r.n)
	clear(b[:k])
	r.n -= k
	return k, nil
}

// TestSendFromErrors: a source that cannot be opened or read ends the test
// with its error; UDP and skip-rx-copy are refused with sources and sinks.
func TestSendFromErrors(t *testing.T) {
	addr, _ := startServer(t, nil)
	errBad := errors.New("bad sector")
	_, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: 20 * time.Second,
		SendFrom: func(int) (io.Reader, error) { return &errReader{n: 1 << 20, err: errBad}, nil }})
	require.ErrorIs(t, err, errBad)
	assert.Contains(t, err.Error(), "stream 1: send from: bad sector")

	_, err = Run(ctxT(t, 30*time.Second), addr, &Config{SendFrom: fromFile(filepath.Join(t.TempDir(), "missing"))})
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "stream 1: send from:")

	sink := func(int) (io.Writer, error) { return io.Discard, nil }
	for _, c := range []Config{{UDP: true, SendFrom: fromMemory(nil)}, {UDP: true, ReceiveTo: sink}, {ReceiveTo: sink, SocketOptions: SocketOptions{SkipRxCopy: true}}} {
		_, err := Run(ctxT(t, 30*time.Second), addr, &c)
		assert.Error(t, err)
	}
	// A server with a sink refuses UDP tests as 3.21's with -F does.
	fileSrv, _ := startServer(t, &ServerConfig{ReceiveTo: sink})
	_, err = Run(ctxT(t, 30*time.Second), fileSrv, &Config{UDP: true, Duration: time.Second})
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 34, se.IErrno, "IEUDPFILETRANSFER")
}

// TestZeroCopySourceNote: with ZeroCopy a reader sendfile cannot send is
// copied, and the result says so.
func TestZeroCopySourceNote(t *testing.T) {
	if !sendfileAvailable {
		t.Skip("no sendfile on this platform")
	}
	data := randomData(1<<20, 4)
	var sinks streamSinks
	addr, results := startServer(t, &ServerConfig{ReceiveTo: sinks.open})
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{SendFrom: fromMemory(data), SocketOptions: SocketOptions{ZeroCopy: true}})
	require.NoError(t, err)
	serverResult(t, results)
	assert.True(t, bytes.Equal(data, sinks.streams()[1]))
	require.Len(t, res.Notes, 1)
	assert.True(t, strings.HasPrefix(res.Notes[0], "zerocopy: SendFrom's reader is not a regular file"), res.Notes[0])
}

// TestOpenDataSendfile: with ZeroCopy, a regular *os.File source is sent
// with sendfile from its current offset; other readers are copied.
func TestOpenDataSendfile(t *testing.T) {
	if !sendfileAvailable {
		t.Skip("no sendfile on this platform")
	}
	path := dataFile(t, randomData(1000, 5))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Seek(10, io.SeekStart)
	require.NoError(t, err)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	for _, tc := range []struct {
		name string
		r    io.Reader
		file bool
	}{{"file", f, true}, {"memory", bytes.NewReader(nil), false}, {"pipe", pr, false}} {
		c := Config{SendFrom: func(int) (io.Reader, error) { return tc.r, nil }, SocketOptions: SocketOptions{ZeroCopy: true}}
		d, err := openData(&c, 1, true)
		require.NoError(t, err)
		if !tc.file {
			assert.Nil(t, d.file, tc.name)
			continue
		}
		assert.Equal(t, f, d.file)
		assert.Equal(t, int64(10), d.off)
		assert.Equal(t, int64(1000), d.size)
	}
	c := Config{SendFrom: fromFile(path)}
	d, err := openData(&c, 1, true)
	require.NoError(t, err)
	assert.Nil(t, d.file, "without ZeroCopy a file is read")
	d, err = openData(&c, 1, false)
	require.NoError(t, err)
	assert.Nil(t, d, "a receiving stream has no source")
}

// TestSendFromIperf3Servers runs our client's sources and sinks against
// stock iperf3 3.12 and 3.21 servers: a server that discards (the test
// still ends when the data is sent), a server writing what it receives to
// its -F file (it loses what it has not read when TEST_END comes, as it
// does without -F), and a server sending its -F file to our -R sink.
func TestSendFromIperf3Servers(t *testing.T) {
	data := randomData(2_000_003, 6)
	src := dataFile(t, data)
	for name, bin := range map[string]func(*testing.T) string{
		"3.12": func(t *testing.T) string { return peertest.Binary(t, "apt-get install iperf3", "iperf3") },
		"3.21": func(t *testing.T) string { return peertest.NewIPerf3(t) },
	} {
		t.Run(name, func(t *testing.T) {
			bin := bin(t)
			plain := startIperf3ServerBin(t, bin)
			for _, cfg := range []Config{{SendFrom: fromFile(src)}, {SendFrom: fromFile(src), SocketOptions: SocketOptions{ZeroCopy: true, StreamThreads: true}},
				{SendFrom: fromMemory(data), Streams: 2, SocketOptions: SocketOptions{StreamThreads: true}}} {
				res, err := runRetry(t, plain, &cfg)
				require.NoError(t, err)
				n := int64(cfg.Streams * len(data))
				if cfg.Streams == 0 {
					n = int64(len(data))
				}
				assert.Equal(t, n, res.Upload.Sent.Bytes)
				assert.LessOrEqual(t, res.Upload.Received.Bytes, n)
			}

			out := filepath.Join(t.TempDir(), "out.bin")
			sink := startIperf3ServerBin(t, bin, "-F", out)
			// Paced, so that it reads some before our TEST_END: at full
			// speed the data can sit in its socket until it closes it.
			_, err := runRetry(t, sink, &Config{SendFrom: fromFile(src), Bitrate: 100e6, BlockLen: 128 << 10, SocketOptions: SocketOptions{StreamThreads: true}})
			require.NoError(t, err)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.NotEmpty(t, got)
			assert.True(t, bytes.HasPrefix(data, got), "%d bytes: not the data's first ones", len(got))

			source := startIperf3ServerBin(t, bin, "-F", src)
			for _, threads := range []bool{false, true} {
				mine := filepath.Join(t.TempDir(), "mine.bin")
				res, err := runRetry(t, source, &Config{
					Reverse:       true,
					Bytes:         int64(len(data)),
					ReceiveTo:     func(int) (io.Writer, error) { return os.Create(mine) },
					SocketOptions: SocketOptions{StreamThreads: threads},
				})
				require.NoError(t, err)
				assert.Equal(t, int64(len(data)), res.Download.Received.Bytes)
				got, err := os.ReadFile(mine)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(data, got), "%d bytes of %d", len(got), len(data))
			}
		})
	}
}

// TestIperf321ClientFiles runs a stock iperf3 3.21 client with -F against
// our server's sink and source: its upload arrives whole (our server reads
// what is in flight at TEST_END), and its -R download into its -F file is
// our server's data, byte for byte. The download is whole 128 KiB blocks:
// a 3.21 receiver waits for the rest of a block that never comes (against
// a 3.21 server -F too) until its -t ends.
func TestIperf321ClientFiles(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	data := randomData(2_200_007, 7)
	src := dataFile(t, data)
	down := randomData(17*iperfTCPBlockLen, 8)
	downSrc := dataFile(t, down)
	for _, threads := range []bool{false, true} {
		var sinks streamSinks
		addr, results := startServer(t, &ServerConfig{ReceiveTo: sinks.open, SendFrom: fromFile(downSrc), SocketOptions: SocketOptions{StreamThreads: threads}})
		doc, _ := runIperf3ClientBin(t, bin, addr, "-F", src)
		srv := serverResult(t, results)
		assert.Equal(t, int64(len(data)), doc.End.SumSent.Bytes)
		assert.Equal(t, int64(len(data)), srv.Upload.Received.Bytes)
		assert.True(t, bytes.Equal(data, sinks.streams()[1]), "upload: %d bytes of %d", len(sinks.streams()[1]), len(data))

		out := filepath.Join(t.TempDir(), "out.bin")
		doc, _ = runIperf3ClientBin(t, bin, addr, "-R", "-F", out, "-n", strconv.Itoa(len(down)))
		serverResult(t, results)
		assert.Equal(t, int64(len(down)), doc.End.SumReceived.Bytes)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(down, got), "download: %d bytes of %d", len(got), len(down))

		// -P 2 without -t sends the file's size in all: each stream a
		// first part of it. 3.21's stream threads race to the byte budget
		// and may each write one block past it, which its sum_sent does
		// not count (docs/testing.md, "Causes outside the project"): our
		// server holds what arrived, between the two.
		doc, _ = runIperf3ClientBin(t, bin, addr, "-F", src, "-P", "2")
		serverResult(t, results)
		var total int64
		for id, b := range sinks.streams() {
			assert.True(t, bytes.HasPrefix(data, b), "stream %d: %d bytes", id, len(b))
			total += int64(len(b))
		}
		assert.GreaterOrEqual(t, total, doc.End.SumSent.Bytes, "every byte 3.21 counts arrived")
		assert.LessOrEqual(t, total, doc.End.SumSent.Bytes+2*iperfTCPBlockLen, "at most a block a stream past its count")
	}
}

// TestSendFromBlockedReadCancel: a source whose read blocks (a pipe no one
// writes to) does not hold Run past its context: the pipe's read deadline
// ends the read.
func TestSendFromBlockedReadCancel(t *testing.T) {
	addr, _ := startServer(t, nil)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	begin := time.Now()
	_, err = Run(ctx, addr, &Config{Duration: 30 * time.Second, SendFrom: func(int) (io.Reader, error) { return pr, nil }})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(begin), 10*time.Second, "well before the 30 s test's end")
	_, err = pr.Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrClosed, "the source was closed")
}

// stallingSink keeps what it is given, and once, when it holds at least
// at bytes, stalls for stall (a file system's flush) before taking more.
type stallingSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	at      int
	stall   time.Duration
	stalled bool
}

func (s *stallingSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	stall := !s.stalled && s.buf.Len() >= s.at
	s.stalled = s.stalled || stall
	s.mu.Unlock()
	if stall {
		time.Sleep(s.stall)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(b)
}

// TestSinkStallAtTheEnd: a server's sink that stalls near the end of a
// client's -F upload still gets every byte (the end's drain waits for a
// write in progress), and the server counts them all.
func TestSinkStallAtTheEnd(t *testing.T) {
	for _, threads := range []bool{false, true} {
		t.Run("threads="+strconv.FormatBool(threads), func(t *testing.T) {
			data := randomData(8<<20, 7)
			sink := &stallingSink{at: 7 << 20, stall: 300 * time.Millisecond}
			addr, results := startServer(t, &ServerConfig{
				ReceiveTo: func(int) (io.Writer, error) { return sink, nil }, SocketOptions: SocketOptions{StreamThreads: threads}})
			res, err := Run(ctxT(t, 30*time.Second), addr, &Config{
				SendFrom:      func(int) (io.Reader, error) { return bytes.NewReader(data), nil },
				SocketOptions: SocketOptions{StreamThreads: threads},
			})
			require.NoError(t, err)
			assert.Equal(t, int64(len(data)), res.Upload.Sent.Bytes)
			srv := <-results
			assert.Equal(t, int64(len(data)), srv.Upload.Received.Bytes, "the server counts every byte")
			sink.mu.Lock()
			defer sink.mu.Unlock()
			require.True(t, sink.stalled, "the sink stalled")
			assert.True(t, bytes.Equal(data, sink.buf.Bytes()), "the sink got %d of %d bytes", sink.buf.Len(), len(data))
		})
	}
}

// TestLocalFailure: a client waits for the server's word only after a
// failure that could be the server's; its own source, sink or receive-idle
// timeout is not.
func TestLocalFailure(t *testing.T) {
	assert.True(t, localFailure(fmt.Errorf("throughput: stream 1: %w", &dataError{op: "receive to", err: io.ErrShortWrite})))
	assert.True(t, localFailure(fmt.Errorf("x: %w", ErrRecvIdle)))
	assert.False(t, localFailure(fmt.Errorf("throughput: stream 1: %w", syscall.ECONNRESET)), "a reset may come with the server's word")
}
