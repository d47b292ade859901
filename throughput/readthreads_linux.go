package throughput

import (
	"net"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadSlice is how long a read thread's read sleeps (SO_RCVTIMEO) before
// it checks whether the test is ending; stop and close also wake it at
// once (shutdown(2)).
const threadSlice = 50 * time.Millisecond

// readThread is a receiving TCP stream's own OS thread (Config.ReadThreads):
// it reads a blocking duplicate of the stream's socket with raw system
// calls, so the kernel wakes exactly this thread when data comes and the
// Go scheduler takes no part. A thread asleep in a raw call keeps its P;
// the P it holds was lent for it (lendPs), so Go code keeps as many Ps as
// before.
//
// With a stock iperf3 3.21 client and 4 streams on 2 shared cores, this
// took our server from 0.86x to 1.05x of 3.21's own server, at 0.89x its
// CPU per byte; reads through the poller, or blocking reads in ordinary
// system calls (which give the P up while they sleep), stayed at
// 0.84-0.88x (docs/benchmarks.md, "Receive path, fourth pass").
type readThread struct {
	mu sync.Mutex // guards fd against a wake after close
	fd int        // -1 once closed
}

// newReadThread duplicates c's socket and makes it blocking, with reads
// that time out after threadSlice; nil when c is not a TCP socket or a
// step fails (c is then untouched). The blocking flag is shared with c's
// descriptor: c must not be read through the poller afterwards.
func newReadThread(c net.Conn) *readThread {
	if _, ok := c.(*net.TCPConn); !ok {
		return nil
	}
	fd, ok := dupSocket(c)
	if !ok {
		return nil
	}
	tv := unix.NsecToTimeval(threadSlice.Nanoseconds())
	if unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil || unix.SetNonblock(fd, false) != nil {
		_ = unix.Close(fd)
		return nil
	}
	return &readThread{fd: fd}
}

// wake ends a sleeping or later read at once (it returns 0 after the
// queued data); safe after close.
func (r *readThread) wake() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd >= 0 {
		_ = unix.Shutdown(r.fd, unix.SHUT_RD)
	}
}

func (r *readThread) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

// read is one blocking read (recvfrom with MSG_TRUNC for skip-rx-copy),
// made raw: the thread sleeps in the kernel holding its P. It returns
// EAGAIN when nothing came for threadSlice, and EINTR when a signal ended
// the sleep (SO_RCVTIMEO keeps the kernel from restarting it). A signal is
// how the runtime asks a goroutine to stop, for the garbage collector or
// because sysmon saw it run for 10 ms; nothing in a raw call would honour
// that, so read yields first.
func (r *readThread) read(buf []byte, trunc bool) (int, unix.Errno) {
	flags := uintptr(0)
	if trunc {
		flags = unix.MSG_TRUNC
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(r.fd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)), flags, 0, 0)
	if errno == unix.EINTR {
		runtime.Gosched()
	}
	return int(n), errno
}

// recvThread is recvTCP on the stream's read thread. A read that timed
// out or was interrupted is retried until the test stops; EOF or an error ends
// the stream, as in recvTCP.
func (e *engine) recvThread(s *flowStream) {
	rt := s.rt
	defer returnP()
	defer rt.close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, e.cfg.ReadLen)
	lw := newLowat(s.conn, e.cfg, &e.lowatOff)
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
			return
		}
		e.add(s, n)
		got += int64(n)
	}
}

// threadPs is the lending of Ps to read threads: GOMAXPROCS is base plus
// lent while any are out.
var threadPs struct {
	sync.Mutex
	lent, base int
}

// maxReadThreads caps the read threads of a process; streams beyond it read
// through the poller.
const maxReadThreads = 32

// lendPs raises GOMAXPROCS by up to want (within maxReadThreads) and
// returns by how much; returnP gives one back. At the last return
// GOMAXPROCS is what it was before the first loan, and the runtime's
// default again when it was that.
func lendPs(want int) int {
	threadPs.Lock()
	defer threadPs.Unlock()
	n := min(want, maxReadThreads-threadPs.lent)
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

// startThreads gives the engine's receiving TCP streams a read thread each
// (flowStream.rt) when cfg.ReadThreads asks for them, as far as
// maxReadThreads allows; the others read through the poller.
func (e *engine) startThreads() {
	if !e.cfg.ReadThreads {
		return
	}
	var want []int
	for i, s := range e.streams {
		if !s.send && !s.udp {
			want = append(want, i)
		}
	}
	for _, i := range want[:lendPs(len(want))] {
		if e.streams[i].rt = newReadThread(e.streams[i].conn); e.streams[i].rt == nil {
			returnP()
		}
	}
}
