//go:build linux

package throughput

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/internal/kstamp"

	"golang.org/x/sys/unix"
)

// udpFast carries a UDP stream's GSO (send) or GRO (receive) state. One
// GSO write of up to 64 KiB is split by the kernel into datagrams of
// segSize bytes; one GRO read may return several datagrams of the size
// given in the UDP_GRO control message. Either makes a single goroutine
// move tens of Gbit/s where one syscall per datagram tops out near 1-2.
type udpFast struct {
	gso    bool
	gro    bool
	stamps bool // one datagram per read, outside the poller; with SO_TIMESTAMPNS, its kernel receive time
}

const udpFastAvailable = true

// newUDPFast enables UDP_SEGMENT (gso, for a sender) or UDP_GRO (gro, for
// a receiver) on uc. It returns an error, and the caller keeps the plain
// path, when the kernel refuses.
func newUDPFast(uc *net.UDPConn, gso, gro bool, segSize int) (*udpFast, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	f := &udpFast{}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if gso {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT, segSize)
			f.gso = serr == nil
		}
		if gro && serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
			f.gro = serr == nil // tuneUDP has sized the receive buffer (fastRecvBuf)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("throughput: udp offload: %w", err)
	}
	return f, nil
}

// reportLocalDrops sets IP_RECVERR (and IPV6_RECVERR) on a sender's
// socket. Without it linux reports a datagram its own qdisc or device
// queue dropped (ENOBUFS) as sent, and counts it only in the namespace's
// UdpSndbufErrors: the sender would count it as sent and the receiver as
// lost on the path. With it the write fails and the sender knows.
// The ICMP errors it also queues reach the sender as ECONNREFUSED, which
// it rides out (transientUDP).
func reportLocalDrops(uc *net.UDPConn) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1)
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1)
	})
}

func (e *engine) recvUDPFast(s *flowStream) error {
	buf := make([]byte, 1<<16)
	oob := make([]byte, unix.CmsgSpace(4)*4)
	read, closeFn := e.udpReadFunc(s.conn, true)
	defer closeFn()
	dl := deadline{stop: &e.stopping}
	now := time.Now()
	for {
		// now is when the previous read returned: one clock reading per
		// read serves its arrival time and the next deadline.
		dl.refreshAt(s.conn, now, e.cfg.IOTimeout, false)
		n, oobn, err := read(buf, oob)
		now = time.Now()
		if err != nil {
			if retry, err := e.udpReadFailed(err, &dl); !retry {
				return err
			}
			continue
		}
		seg := groSegment(oob[:oobn])
		if seg <= 0 || seg >= n {
			e.udpDatagram(s, buf[:n], now)
			continue
		}
		e.udpBatch(s, buf[:n], seg, now)
	}
}

// groSegment returns the segment size from a UDP_GRO control message, or 0.
func groSegment(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4 {
			return int(int32(binary.NativeEndian.Uint32(m.Data[:4])))
		}
	}
	return 0
}

// udpBatch accounts a GRO buffer of datagrams of seg bytes (the last may
// be shorter) that arrived at now with one clock reading and one lock,
// which is what lets one goroutine keep up with tens of Gbit/s.
func (e *engine) udpBatch(s *flowStream, b []byte, seg int, now time.Time) {
	if !e.counting.Load() {
		if seg > 0 {
			s.late.Add(int64((len(b) + seg - 1) / seg))
		}
		return
	}
	arr := e.arrivalAt(now)
	var blocks, bytes int64
	s.mu.Lock()
	for off := 0; off < len(b); off += seg {
		end := min(off+seg, len(b))
		h, err := iperfwire.ParseUDPHeader(b[off:end], counters64(e.cfg))
		if err != nil {
			continue // as udpDatagram: a datagram too short for a header is not counted
		}
		s.rstats.add(h.Count, float64(h.Sec)+float64(h.Usec)/1e6, arr, end-off)
		blocks++
		bytes += int64(end - off)
	}
	s.mu.Unlock()
	e.addBlocks(s, int(bytes), blocks)
}

// enableRxStamps asks the kernel for each datagram's receive time
// (SO_TIMESTAMPNS) on uc.
func enableRxStamps(uc *net.UDPConn) bool {
	rc, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return false
	}
	return serr == nil
}

// recvUDPStamped reads one datagram per call and takes its arrival time
// from the kernel (SO_TIMESTAMPNS): when it reached the socket, not when
// this goroutine woke up. The Go netpoller's wake-up costs microseconds,
// the scale of a fast flow's jitter, where a thread blocked in recv (as
// iperf3's) wakes faster. Without SO_TIMESTAMPNS (JitterRead) the arrival
// is the time the read returned, as iperf3 takes it.
func (e *engine) recvUDPStamped(s *flowStream) error {
	buf := make([]byte, 1<<16)
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))*2)
	read, closeFn := e.udpReadFunc(s.conn, false)
	defer closeFn()
	dl := deadline{stop: &e.stopping}
	now := time.Now()
	for {
		dl.refreshAt(s.conn, now, e.cfg.IOTimeout, false)
		n, oobn, err := read(buf, oob)
		if err != nil {
			if retry, err := e.udpReadFailed(err, &dl); !retry {
				return err
			}
			// The next deadline counts from now, not from the last
			// datagram's arrival: that one may be long past.
			now = time.Now()
			continue
		}
		var ok bool
		if now, ok = kstamp.Stamp(oob[:oobn]); !ok {
			now = time.Now()
		}
		e.udpDatagram(s, buf[:n], now)
	}
}

// udpReceiver takes a connected UDP socket's receiving out of the Go
// poller, as udpSender does for sending, and returns the function that
// reads one message (its data into buf, its control messages into oob) and
// the one that closes the socket; ok is false (and c untouched) when it
// cannot. A reader with nothing to read waits in poll(2), woken by the
// kernel directly (no runtime thread in between), and returns net.ErrClosed
// within 50 ms of stop being set; with dense (an unlimited flow's GRO
// reader) it spins briefly first while batches come close together
// (spinWait). It reuses one message header: not safe for concurrent use.
func udpReceiver(c net.Conn, stop *atomic.Bool, dense bool) (recv func(buf, oob []byte) (n, oobn int, err error), closeFn func(), ok bool) {
	fd, closeFn, ok := detachUDP(c)
	if !ok {
		return nil, nil, false
	}
	var (
		msg  unix.Msghdr
		iov  unix.Iovec
		spin *spinWait
	)
	if dense {
		spin = newSpinWait()
	}
	read := func() (uintptr, syscall.Errno) {
		n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
		return n, errno
	}
	recv = func(buf, oob []byte) (int, int, error) {
		iov.Base = &buf[0]
		iov.SetLen(len(buf))
		msg.Iov = &iov
		msg.SetIovlen(1)
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
		n, err := retryRaw(fd, unix.POLLIN, stop, func() (uintptr, syscall.Errno) {
			if spin != nil {
				return spin.try(read)
			}
			return read()
		})
		if err != nil {
			return 0, 0, err
		}
		return int(n), int(msg.Controllen), nil
	}
	return recv, closeFn, true
}

// udpReadFunc is how a fast-path receiver reads: through udpReceiver
// (dense as there), or through c (which the fast path was set up on) when
// that fails.
func (e *engine) udpReadFunc(c net.Conn, dense bool) (read func(buf, oob []byte) (int, int, error), closeFn func()) {
	if recv, cl, ok := udpReceiver(c, &e.stopping, dense); ok {
		return recv, cl
	}
	uc := c.(*net.UDPConn)
	return func(buf, oob []byte) (int, int, error) {
		n, oobn, _, _, err := uc.ReadMsgUDPAddrPort(buf, oob)
		return n, oobn, err
	}, func() {}
}
