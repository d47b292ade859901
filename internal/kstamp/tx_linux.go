//go:build linux

package kstamp

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flags this file sets beyond x/sys's: SOF_TIMESTAMPING_OPT_RX_FILTER
// (linux 6.0) keeps SOF_TIMESTAMPING_SOFTWARE from adding a second stamp
// to every receive, whose SO_TIMESTAMPNS stamp is already taken.
const sofOptRXFilter = 1 << 17

// txRing is how many recent stamps a TX keeps by ID: a caller takes its
// request's stamp once its reply is in, so only the few requests in flight
// need one.
const txRing = 64

// TX takes the kernel's software transmit timestamps of a connected
// socket's sends (SO_TIMESTAMPING with SOF_TIMESTAMPING_TX_SOFTWARE,
// SOFTWARE, OPT_ID and OPT_TSONLY) from its error queue. The caller tells
// it of every send (Sent), in order, and takes a request's stamp (Take)
// once the reply is in: over loopback and veth the stamp is queued before
// the request reaches the peer, so before any reply. A socket whose error
// queue is not empty polls POLLERR: a reader that polls calls Drain when
// it sees it. A TX is not safe for concurrent use, except Lost and Taken.
type TX struct {
	raw   syscall.RawConn
	tcp   bool
	idTCP bool   // SOF_TIMESTAMPING_OPT_ID_TCP took (linux 6.2+)
	next  uint32 // UDP: datagrams sent; TCP: bytes sent

	// ring keeps the latest stamps in the order they were read: TCP keys
	// step by the request's size, so a key's remainder would not spread
	// them.
	ring        [txRing]TXStamp
	have        [txRing]bool
	pos         int
	lost, taken atomic.Int64
	other       int64 // stamps of another kind, or unreadable

	drainFn  func(fd uintptr)
	until    uint32 // Collect's key
	hasUntil bool
	msg      unix.Msghdr
	oob      []byte

	// EnablePerSend's: every send goes through Write (txsend_linux.go),
	// whose state is kept here so that it allocates nothing.
	perSend bool
	sendFn  func(fd uintptr) bool
	sendOOB []byte
	smsg    unix.Msghdr
	siov    unix.Iovec
	sb      []byte
	sstamp  bool
	// blk is the blocking Reader's whose Send this is (nil in Write):
	// its deadline is checked between the passes of a send the socket
	// did not take at once.
	blk  *blocking
	sn   int
	sid  uint32
	serr error
}

// ErrTXUnsupported is wrapped by EnableTX's error when the connection has
// no socket the kernel can stamp (a TLS connection, a pipe) or the kernel
// refuses.
var ErrTXUnsupported = errors.New("kstamp: no transmit timestamps")

// EnableTX turns transmit timestamps on for c, a connected TCP or UDP
// socket, and returns its TX. Over TCP it must be called while nothing
// sent is unacknowledged (before the first send, or between a reply and
// the next request): on kernels before 6.2, without
// SOF_TIMESTAMPING_OPT_ID_TCP, the keys count from the oldest
// unacknowledged byte.
func EnableTX(c net.Conn) (*TX, error) {
	tcp, raw, err := txSocket(c)
	if err != nil {
		return nil, err
	}
	t := &TX{raw: raw, tcp: tcp, oob: make([]byte, errQueueOOB)}
	t.drainFn = t.drainFD
	base := unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	tries := []int{base | sofOptRXFilter, base}
	if tcp {
		tries = []int{base | sofOptRXFilter | unix.SOF_TIMESTAMPING_OPT_ID_TCP, base | unix.SOF_TIMESTAMPING_OPT_ID_TCP, base | sofOptRXFilter, base}
	}
	if err := t.setFlags(tries); err != nil {
		return nil, err
	}
	return t, nil
}

// Sent records a send of n bytes (one datagram over UDP) and returns the
// key its stamp will carry: the datagram's number, or the offset of its
// last byte.
func (t *TX) Sent(n int) uint32 {
	if !t.tcp {
		id := t.next
		t.next++
		return id
	}
	t.next += uint32(n)
	return t.next - 1
}

// Take returns the stamp of the send whose key is id, draining the error
// queue first when the stamp is not held yet (Collect). A stamp not there
// is counted as lost: the kernel dropped it (its error queue was full) or
// the device never stamped it.
func (t *TX) Take(id uint32) (time.Time, bool) {
	t.taken.Add(1)
	// A stamp Collect took right after its send is already held: the
	// error queue is read only for one that is not, which spares the
	// reply's path a receive (issue 42).
	at, ok := t.find(id)
	if !ok {
		t.Drain()
		at, ok = t.find(id)
	}
	if !ok {
		t.lost.Add(1)
	}
	return at, ok
}

// find takes the held stamp keyed id out of the ring.
func (t *TX) find(id uint32) (time.Time, bool) {
	for i := range t.ring {
		if t.have[i] && t.ring[i].ID == id {
			t.have[i] = false
			return t.ring[i].At, true
		}
	}
	return time.Time{}, false
}

// Drain reads every message of the socket's error queue now, without
// blocking, keeping the stamps for Take.
func (t *TX) Drain() { t.until, t.hasUntil = 0, false; _ = t.raw.Control(t.drainFn) }

// Collect reads the error queue, without blocking, until it has read the
// stamp keyed id (or the queue is empty), keeping the stamps for Take. A
// sender calls it right after a send: over loopback and veth the stamp is
// queued by the send itself, so one receive takes it and the next poll(2)
// sleeps, where a stamp left in the queue would wake it at once (POLLERR).
func (t *TX) Collect(id uint32) { t.until, t.hasUntil = id, true; _ = t.raw.Control(t.drainFn) }

func (t *TX) drainFD(fd uintptr) {
	for {
		t.msg = unix.Msghdr{Control: &t.oob[0]}
		t.msg.SetControllen(len(t.oob))
		_, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&t.msg)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if errno != 0 {
			t.msg.Control = nil
			return // EAGAIN: the queue is empty
		}
		st, err := ParseTX(t.oob[:t.msg.Controllen])
		if err != nil || st.Kind != unix.SCM_TSTAMP_SND {
			t.other++
			continue
		}
		t.ring[t.pos], t.have[t.pos] = st, true
		t.pos = (t.pos + 1) % txRing
		if t.hasUntil && st.ID == t.until {
			t.msg.Control = nil
			return
		}
	}
}

// Lost is how many stamps Take did not find; Taken how many it was asked
// for. Both are safe to call from any goroutine.
func (t *TX) Lost() int64 { return t.lost.Load() }

// Taken is how many stamps Take was asked for.
func (t *TX) Taken() int64 { return t.taken.Load() }

// KeysFromFirstByte reports whether the kernel took
// SOF_TIMESTAMPING_OPT_ID_TCP (linux 6.2+): TCP keys then count from the
// first byte sent after EnableTX whatever was in flight.
func (t *TX) KeysFromFirstByte() bool { return t.idTCP }
