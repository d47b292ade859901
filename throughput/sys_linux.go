//go:build linux

package throughput

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const tcpInfoAvailable = true

// readTCPInfo samples TCP_INFO from a TCP connection.
func readTCPInfo(c net.Conn) (tcpInfo, error) {
	tc, ok := tcpSocket(c)
	if !ok {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: not a TCP connection")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", err)
	}
	var ti *unix.TCPInfo
	var n uintptr
	var serr error
	if err := rc.Control(func(fd uintptr) {
		ti, n, serr = getTCPInfo(int(fd))
	}); err != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", err)
	}
	if serr != nil {
		return tcpInfo{}, fmt.Errorf("throughput: tcp_info: %w", serr)
	}
	return tcpInfo{
		OK:           true,
		TotalRetrans: int64(ti.Total_retrans),
		SndCwndBytes: int64(ti.Snd_cwnd) * int64(ti.Snd_mss),
		RTTUs:        int64(ti.Rtt),
		RTTVarUs:     int64(ti.Rttvar),
		PMTU:         int64(ti.Pmtu),
		SndWnd:       int64(ti.Snd_wnd),
		ReordSeen:    int64(ti.Reord_seen),
		lim:          limitsOf(ti, n, time.Now()),
	}, nil
}

// controlTCP sets the options that must be in place before connect.
func controlTCP(fd uintptr, o sockOpts) error {
	if o.window > 0 {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, o.window); err != nil {
			return fmt.Errorf("throughput: SO_SNDBUF: %w", err)
		}
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, o.window); err != nil {
			return fmt.Errorf("throughput: SO_RCVBUF: %w", err)
		}
	}
	if o.mss > 0 {
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.mss); err != nil {
			return fmt.Errorf("throughput: TCP_MAXSEG: %w", err)
		}
	}
	if o.pacing > 0 {
		// The kernel paces TCP itself; iperf3's --fq-rate.
		if err := unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, uint64(o.pacing/8)); err != nil {
			return fmt.Errorf("throughput: SO_MAX_PACING_RATE: %w", err)
		}
	}
	if o.congestion != "" {
		if err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.congestion); err != nil {
			return fmt.Errorf("throughput: TCP_CONGESTION %q: %w", o.congestion, err)
		}
	}
	return nil
}

// optsNotAvailable lists requested options this platform cannot apply.
func optsNotAvailable(sockOpts) []string { return nil }

// forceBuffers sets the receive and send buffers past rmem_max/wmem_max
// where the process may (root); failures are ignored, the plain setting stays.
func forceBuffers(c syscall.Conn, rcv, snd int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcv)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, snd)
	})
}

// socketBuffers reads the actual SO_SNDBUF and SO_RCVBUF.
func socketBuffers(c syscall.Conn) (snd, rcv int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		snd, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		rcv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	return snd, rcv
}

// tcpCongestion returns the congestion control algorithm of a TCP connection.
func tcpCongestion(c net.Conn) string {
	tc, ok := tcpSocket(c)
	if !ok {
		return ""
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}

// preciseSleep is the linux pacer sleeper: nanosleep with the thread's
// timer slack at 1 us (the default 50 us would let a 1 Gbit/s flow drift
// by 6 KB per sleep), after the runtime's timer for the bulk of long
// waits. The goroutine is not locked to its thread: a locked goroutine
// waits for its own thread after every sleep, which on a busy process cost
// milliseconds per wake-up. Instead the slack is set on whichever thread
// runs the sleep (the goroutine stays on it for the system call) and left
// there: a thread with a small slack only wakes on time.
type preciseSleep struct{ quit <-chan struct{} }

// newSleeper returns the pacer's sleeper.
func newSleeper(quit <-chan struct{}) sleeper { return preciseSleep{quit: quit} }

// maxNap bounds one nanosleep, so a closed quit ends a sleep within it.
const maxNap = 2 * time.Millisecond

func (p preciseSleep) sleep(d time.Duration) {
	end := time.Now().Add(d)
	if d > maxNap+coarseSpin {
		timerSleep(d-coarseSpin, p.quit)
	}
	for {
		select {
		case <-p.quit:
			return
		default:
		}
		left := time.Until(end)
		if left <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(min(left, maxNap)))
		nap(&ts)
	}
}

func (preciseSleep) close() {}

// nap sets the calling thread's timer slack to 1 us and sleeps ts. The
// goroutine is rarely moved to another thread in between; that sleep then
// has the other thread's slack, which costs precision, not correctness.
func nap(ts *unix.Timespec) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	runtime.UnlockOSThread()
	_ = unix.Nanosleep(ts, nil)
}

// setPacingRate sets SO_MAX_PACING_RATE to bits/s (as bytes/s; the 64-bit
// form first, for rates past 34 Gbit/s).
func setPacingRate(c syscall.Conn, bits float64) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	v := uint64(bits / 8)
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, v)
		if serr != nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(min(v, 1<<32-1)))
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("throughput: SO_MAX_PACING_RATE: %w", err)
	}
	return nil
}

// dataPathNotAvailable lists the data-path options c asks for that this
// platform lacks: none on linux.
func dataPathNotAvailable(*Config) []string { return nil }

// truncReader reads a connection with recv(MSG_TRUNC): the kernel drops
// the payload instead of copying it and returns its length (for a
// datagram, its whole length, with the first len(buf) bytes in buf).
type truncReader struct {
	rc  syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// rawConn is c's syscall.RawConn, or errNotAvailable for a connection
// without one.
func rawConn(c any) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errNotAvailable
	}
	return sc.SyscallConn()
}

func newTruncReader(c net.Conn, buf []byte) (*truncReader, error) {
	rc, err := rawConn(c)
	if err != nil {
		return nil, err
	}
	t := &truncReader{rc: rc, buf: buf}
	t.fn = func(fd uintptr) bool {
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)),
			unix.MSG_TRUNC|unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EAGAIN || errno == unix.EINTR {
			return false
		}
		t.n, t.err = int(n), nil
		if errno != 0 {
			t.n, t.err = 0, os.NewSyscallError("recvfrom", errno)
		} else if n == 0 {
			t.err = io.EOF
		}
		return true
	}
	return t, nil
}

// read is one recv; it honours the connection's read deadline.
func (t *truncReader) read() (int, error) {
	if err := t.rc.Read(t.fn); err != nil {
		return 0, err
	}
	return t.n, t.err
}

// fileSender writes a connection with sendfile from a file that holds one
// block (payloadFile), so the payload is never copied from user space (iperf3
// -Z).
type fileSender struct {
	rc   syscall.RawConn
	file *os.File
	len  int
}

// payloadFile is a file that holds block, for sendfile: an unnamed file
// in os.TempDir (O_TMPFILE), as iperf3 -Z sends from a temporary file, or
// an in-memory one (memfd) where that directory cannot hold one. Shmem
// (memfd, tmpfs) looks each page up under its lock when it splices: perf
// put 21 % of a 4-stream -Z client in shmem_file_splice_read and its
// lookups, against 9.5 % in filemap_splice_read for 3.21's temporary file,
// and the temporary file took our CPU per byte from 1.37x 3.21's to 1.12x.
func payloadFile(block []byte) (*os.File, error) {
	f, err := fileHolding(block, func() (int, error) {
		return unix.Open(os.TempDir(), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	})
	if err != nil { // no such directory, no O_TMPFILE there, or a full disk
		f, err = fileHolding(block, func() (int, error) { return unix.MemfdCreate("netperfkit-payload", unix.MFD_CLOEXEC) })
	}
	if err != nil {
		return nil, fmt.Errorf("throughput: zerocopy: %w", err)
	}
	return f, nil
}

// fileHolding opens a file with open and writes block to it.
func fileHolding(block []byte, open func() (int, error)) (*os.File, error) {
	fd, err := open()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "netperfkit-payload")
	if _, err := f.Write(block); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func newFileSender(c net.Conn, block []byte) (*fileSender, error) {
	rc, err := rawConn(c)
	if err != nil {
		return nil, err
	}
	f, err := payloadFile(block)
	if err != nil {
		return nil, err
	}
	return &fileSender{rc: rc, file: f, len: len(block)}, nil
}

// write sends one block (part of it when the write deadline stops it).
func (fs *fileSender) write() (int, error) { return sendFileAt(fs.rc, fs.file, 0, fs.len) }

func (fs *fileSender) close() { _ = fs.file.Close() }

// sendfileAvailable: a SendFrom file can be sent with sendfile (ZeroCopy).
const sendfileAvailable = true

// sendFileAt sends n bytes of f from off on the stream of rc with
// sendfile(2), all of them unless an error or the write deadline stops
// it, and returns how many went. A file that ends early (it shrank) fails
// with ENODATA.
func sendFileAt(rc syscall.RawConn, f *os.File, off int64, n int) (int, error) {
	src := int(f.Fd())
	done := 0
	var serr error
	err := rc.Write(func(fd uintptr) bool {
		for done < n {
			k, err := unix.Sendfile(int(fd), src, &off, n-done)
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err == nil && k == 0:
				err = unix.ENODATA
			}
			if err != nil {
				serr = os.NewSyscallError("sendfile", err)
				return true
			}
			done += k
		}
		return true
	})
	runtime.KeepAlive(f)
	if err == nil {
		err = serr
	}
	return done, err
}

// setRcvLowat sets SO_RCVLOWAT: the socket reads as ready only once n bytes
// are queued (or the peer closed). Lowering it wakes a waiting reader.
func setRcvLowat(c syscall.Conn, n int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

// udpSender takes a connected UDP socket's sending out of the Go runtime's
// poller and returns the function that sends on it, and the one that
// closes it; ok is false (and c untouched) when it cannot.
//
// The poller registers every socket for write readiness, edge-triggered,
// and a UDP socket turns writable again each time the kernel frees a sent
// buffer: with the socket in the poller, every write woke a sleeping
// runtime thread on the other core (235,000 epoll waits and 205,000 context
// switches in 3 s of unlimited UDP, against 315 and 856 without), and the
// sender lost 15-25 % of its rate to those wake-ups. iperf3 keeps its data
// sockets out of its select loop the same way. The socket is a duplicate
// of c's, which is closed (the socket lives on in the duplicate); a write
// that would block waits in poll(2) for at most 50 ms at a time, until it
// can go or stop is set.
func udpSender(c net.Conn, stop *atomic.Bool) (send func([]byte) (int, error), closeFn func(), ok bool) {
	fd, closeFn, ok := detachUDP(c)
	if !ok {
		return nil, nil, false
	}
	send = func(b []byte) (int, error) {
		if len(b) == 0 {
			return 0, nil
		}
		n, err := retryRaw(fd, unix.POLLOUT, stop, func() (uintptr, syscall.Errno) {
			n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			return n, errno
		})
		return int(n), err
	}
	return send, closeFn, true
}

// retryRaw makes call, a non-blocking system call on fd: the call never
// sleeps, so it is made raw, without the scheduler's system-call
// bookkeeping. When it would block it waits in poll(2) for events and
// tries again, until stop is set (then net.ErrClosed).
func retryRaw(fd int, events int16, stop *atomic.Bool, call func() (uintptr, syscall.Errno)) (uintptr, error) {
	for {
		n, errno := call()
		switch {
		case errno == 0:
			return n, nil
		case errno != unix.EAGAIN:
			return 0, errno
		case stop.Load():
			return 0, net.ErrClosed
		}
		waitFD(fd, events)
	}
}

// detachUDP duplicates a UDP socket and closes c, which takes the socket
// out of the Go poller (the duplicate keeps it open); closeFn closes the
// duplicate, once.
func detachUDP(c net.Conn) (fd int, closeFn func(), ok bool) {
	uc, isUDP := c.(*net.UDPConn)
	if !isUDP {
		return -1, nil, false
	}
	if fd, ok = dupSocket(uc); !ok {
		return -1, nil, false
	}
	_ = uc.Close()
	var once sync.Once
	return fd, func() { once.Do(func() { _ = unix.Close(fd) }) }, true
}

// dupSocket duplicates c's socket descriptor (for detachUDP and the TCP
// stream threads), leaving c as it was.
func dupSocket(c net.Conn) (int, bool) {
	rc, err := rawConn(c)
	if err != nil {
		return -1, false
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil || derr != nil {
		return -1, false
	}
	return fd, true
}

// waitFD waits in poll(2), at most 50 ms, for fd to be ready for events:
// callers re-check their stop flag between waits.
func waitFD(fd int, events int16) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	_, _ = unix.Poll(pfd, 50)
}
