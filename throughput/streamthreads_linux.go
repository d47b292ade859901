package throughput

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadSlice is how long a stream thread's read or write sleeps
// (SO_RCVTIMEO, SO_SNDTIMEO) before it checks whether the test is ending;
// stop and close also wake a reader at once (shutdown(2)), and a writer
// whose peer reads is never asleep for long.
const threadSlice = 50 * time.Millisecond

// streamThread is a TCP stream's own OS thread (Config.StreamThreads): it
// reads or writes a blocking duplicate of the stream's socket with raw
// system calls, so the kernel wakes exactly this thread when data or
// buffer space comes and the Go scheduler takes no part. A thread asleep
// in a raw call keeps its P; the P it holds was lent for it (lendPs), so
// Go code keeps as many Ps as before.
//
// It takes the socket over from the Go poller: the stream's net.Conn is
// closed (its descriptor leaves the poller's epoll set) and the
// streamThread is the stream's conn from then on. Left in the epoll set,
// the socket woke the poller at every edge of data or buffer space, which
// doubled our client's context switches and cost it 1.15x 3.21's CPU per
// byte with 4 streams; taken out, 0.96x.
//
// With a stock iperf3 3.21 client and 4 streams on 2 shared cores, reading
// on such threads took our server from 0.86x to 1.05x of 3.21's own
// server; reads through the poller, or blocking reads in ordinary system
// calls (which give the P up while they sleep), stayed at 0.84-0.88x.
// Taking the sockets out of the poller then brought it to 1.09-1.14x at
// 0.70-0.81x 3.21's CPU per byte, and our 4-stream client to 1.00x 3.21's
// client (0.80x through the poller). See docs/benchmarks.md, "Receive
// path, fourth pass" and "Stream threads, fifth pass".
type streamThread struct {
	mu           sync.Mutex // guards fd against a wake or Control after Close
	fd           int        // -1 once closed
	send         bool       // the stream sends: wake shuts the write side
	laddr, raddr net.Addr
}

// newStreamThread takes c's socket over: it duplicates it, makes the
// duplicate blocking, with reads and writes that time out after
// threadSlice, and closes c. It returns nil, with c untouched, when c is
// not a TCP socket or a step fails.
func newStreamThread(c net.Conn, send bool) *streamThread {
	if _, ok := c.(*net.TCPConn); !ok {
		return nil
	}
	fd, ok := dupSocket(c)
	if !ok {
		return nil
	}
	tv := unix.NsecToTimeval(threadSlice.Nanoseconds())
	if unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil ||
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv) != nil ||
		unix.SetNonblock(fd, false) != nil {
		_ = unix.Close(fd)
		return nil
	}
	t := &streamThread{fd: fd, send: send, laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	_ = c.Close() // the duplicate keeps the connection open
	return t
}

// wake ends a sleeping or later read or write at once: a read returns 0
// after the queued data, a write EPIPE. Safe after Close.
func (t *streamThread) wake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	how := unix.SHUT_RD
	if t.send {
		how = unix.SHUT_WR
	}
	if t.fd >= 0 {
		_ = unix.Shutdown(t.fd, how)
	}
}

// read is one blocking read (recvfrom with MSG_TRUNC for skip-rx-copy),
// made raw: the thread sleeps in the kernel holding its P. It returns
// EAGAIN when nothing came for threadSlice, and EINTR when a signal ended
// the sleep (SO_RCVTIMEO keeps the kernel from restarting it). A signal is
// how the runtime asks a goroutine to stop, for the garbage collector or
// because sysmon saw it run for 10 ms; nothing in a raw call would honour
// that, so read yields first.
func (t *streamThread) read(buf []byte, trunc bool) (int, unix.Errno) {
	flags := uintptr(0)
	if trunc {
		flags = unix.MSG_TRUNC
	}
	return t.raw(unix.SYS_RECVFROM, buf, flags)
}

// blockSend is one blocking send of a block from an offset on, raw as
// read is, with the same EAGAIN and EINTR; it may send part of the rest.
// syscall names it in errors.
type blockSend struct {
	len     int
	syscall string
	send    func(off int) (int, unix.Errno)
}

// sendto sends buf from memory. MSG_NOSIGNAL: a closed peer is EPIPE,
// never a signal.
func (t *streamThread) sendto(buf []byte) blockSend {
	return blockSend{len(buf), "sendto", func(off int) (int, unix.Errno) {
		return t.raw(unix.SYS_SENDTO, buf[off:], unix.MSG_NOSIGNAL)
	}}
}

// sendfileAt sends n bytes of f from off: the file that holds the block
// (ZeroCopy, from 0) or a SendFrom source's, so the payload is never
// copied from user space. A closed peer is EPIPE here too: the runtime
// ignores SIGPIPE on any descriptor but 1 and 2. A file that ends early
// (it shrank) fails with ENODATA.
func (t *streamThread) sendfileAt(f *os.File, off int64, n int) blockSend {
	src := f.Fd()
	return blockSend{n, "sendfile", func(done int) (int, unix.Errno) {
		pos := off + int64(done)
		r, _, errno := unix.RawSyscall6(unix.SYS_SENDFILE, uintptr(t.fd), src,
			uintptr(unsafe.Pointer(&pos)), uintptr(n-done), 0, 0)
		runtime.KeepAlive(f)
		if r == 0 && errno == 0 {
			errno = unix.ENODATA
		}
		return int(r), yieldOnEINTR(errno)
	}}
}

func (t *streamThread) raw(trap uintptr, buf []byte, flags uintptr) (int, unix.Errno) {
	n, _, errno := unix.RawSyscall6(trap, uintptr(t.fd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)), flags, 0, 0)
	return int(n), yieldOnEINTR(errno)
}

// yieldOnEINTR yields when a signal ended a raw call: the signal was the
// runtime asking this goroutine to stop.
func yieldOnEINTR(errno unix.Errno) unix.Errno {
	if errno == unix.EINTR {
		runtime.Gosched()
	}
	return errno
}

// writeAll sends all of b, again after partial sends, timeouts and
// signals. It gives up when stop is set, before it starts or while it
// waits for room (errStopWrite), or when no byte went out for timeout
// (os.ErrDeadlineExceeded, as a write through the poller past its
// deadline), and returns how much it sent.
func (t *streamThread) writeAll(b blockSend, stop *atomic.Bool, timeout time.Duration) (int, error) {
	if stop.Load() { // as a write through the poller after stopSenders' deadline
		return 0, errStopWrite
	}
	var done int
	var stalled time.Time // when a send first found no room, zero while bytes go out
	for done < b.len {
		n, errno := b.send(done)
		switch {
		case errno == 0:
			done += n
			stalled = time.Time{}
		case errno == unix.EAGAIN || errno == unix.EINTR:
			if stop.Load() {
				return done, errStopWrite
			}
			if now := time.Now(); stalled.IsZero() {
				stalled = now
			} else if timeout > 0 && now.Sub(stalled) >= timeout {
				return done, os.ErrDeadlineExceeded
			}
		default: // as the poller's write would say it
			return done, &net.OpError{Op: "write", Net: "tcp", Source: t.laddr, Addr: t.raddr, Err: os.NewSyscallError(b.syscall, errno)}
		}
	}
	return done, nil
}

// errStopWrite ends a thread's write when the test stops; sendTCP, which
// sees sendStop set, returns nil for it.
var errStopWrite = errors.New("throughput: write stopped")

// recvThread is recvTCP on the stream's thread. A read that timed out or
// was interrupted is retried until the test stops; EOF or an error ends
// the stream, as in recvTCP. What it reads goes to the stream's sink, when
// it has one; a sink's error is the one it returns.
func (e *engine) recvThread(s *flowStream) error {
	rt := threadOf(s.conn)
	defer onThread()()
	buf := make([]byte, e.cfg.ReadLen)
	lw := newLowat(s.conn, e.cfg, &e.lowatOff)
	var sink io.Writer
	if s.data != nil {
		sink = s.data.w
	}
	var got int64
	for !e.stopping.Load() {
		if lw.enabled {
			lw.adapt(time.Now(), got)
		}
		n, errno := rt.read(buf, e.cfg.SkipRxCopy)
		switch {
		case errno == unix.EAGAIN || errno == unix.EINTR:
			continue
		case errno != 0 || n == 0:
			return nil
		}
		e.add(s, n)
		got += int64(n)
		if sink != nil {
			if err := writeSink(s, sink, buf[:n]); err != nil {
				return err
			}
		}
	}
	return nil
}

// threadWriter is sendTCP's write on the stream's thread: it locks the
// calling goroutine to its OS thread, and the returned done, which the
// caller defers, unlocks it and gives the thread's P back. (The socket
// stays open for TCP_INFO until the engine closes its streams.) With
// ZeroCopy it sends with sendfile from a file that holds buf
// (payloadFile), or from buf itself when that file cannot be made, as the
// poller's path does.
func (e *engine) threadWriter(s *flowStream, buf []byte) (write func() (int, error), done func()) {
	rt := threadOf(s.conn)
	b := rt.sendto(buf)
	var f *os.File
	if e.cfg.ZeroCopy {
		var err error
		if f, err = payloadFile(buf); err == nil {
			b = rt.sendfileAt(f, 0, len(buf))
		}
	}
	unlock := onThread()
	return func() (int, error) { return rt.writeAll(b, &e.sendStop, e.cfg.IOTimeout) },
		func() {
			unlock()
			if f != nil {
				_ = f.Close()
			}
		}
}

// onThread locks the calling goroutine to its OS thread, the stream's, and
// returns what unlocks it and gives the thread's P back (lendPs).
func onThread() (unlock func()) {
	runtime.LockOSThread()
	return func() {
		runtime.UnlockOSThread()
		returnP()
	}
}

// threadSender is a source's dataSender on the stream's thread: sendto
// from memory, sendfile from a file, each sending all it is given as
// threadWriter's write does. It locks the calling goroutine to its OS
// thread until done.
func (e *engine) threadSender(s *flowStream) dataSender {
	rt := threadOf(s.conn)
	return dataSender{
		send: func(b []byte) (int, error) { return rt.writeAll(rt.sendto(b), &e.sendStop, e.cfg.IOTimeout) },
		sendFile: func(f *os.File, off int64, n int) (int, error) {
			return rt.writeAll(rt.sendfileAt(f, off, n), &e.sendStop, e.cfg.IOTimeout)
		},
		done: onThread(),
	}
}

// threadPs is the lending of Ps to stream threads: GOMAXPROCS is base plus
// lent while any are out.
var threadPs struct {
	sync.Mutex
	lent, base int
}

// maxStreamThreads caps the stream threads of a process; streams beyond it
// read and write through the poller.
const maxStreamThreads = 32

// lendPs raises GOMAXPROCS by up to want (within maxStreamThreads) and
// returns by how much; returnP gives one back. At the last return
// GOMAXPROCS is what it was before the first loan, and the runtime's
// default again when it was that.
func lendPs(want int) int {
	threadPs.Lock()
	defer threadPs.Unlock()
	n := min(want, maxStreamThreads-threadPs.lent)
	if n <= 0 {
		return 0
	}
	if threadPs.lent == 0 {
		threadPs.base = runtime.GOMAXPROCS(0)
	}
	threadPs.lent += n
	runtime.GOMAXPROCS(threadPs.base + threadPs.lent)
	return n
}

func returnP() {
	threadPs.Lock()
	defer threadPs.Unlock()
	threadPs.lent--
	if threadPs.lent > 0 {
		runtime.GOMAXPROCS(threadPs.base + threadPs.lent)
		return
	}
	// Setting GOMAXPROCS ends the runtime's own updates of it (to CPU
	// limits that change); when base was the runtime's value, give that
	// back rather than a fixed number.
	runtime.SetDefaultGOMAXPROCS()
	if runtime.GOMAXPROCS(0) != threadPs.base {
		runtime.GOMAXPROCS(threadPs.base)
	}
}

// startThreads gives the engine's TCP streams a thread each, which is the
// stream's conn from then on, when cfg.StreamThreads asks for them, as far
// as maxStreamThreads allows; the others go through the poller.
func (e *engine) startThreads() {
	if !e.cfg.StreamThreads {
		return
	}
	var want []*flowStream
	for _, s := range e.streams {
		if !s.udp {
			want = append(want, s)
		}
	}
	for _, s := range want[:lendPs(len(want))] {
		rt := newStreamThread(s.conn, s.send)
		if rt == nil {
			returnP()
			continue
		}
		s.conn = rt
	}
}
