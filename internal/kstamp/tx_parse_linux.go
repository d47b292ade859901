//go:build linux

package kstamp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TXStamp is one transmit timestamp read from a socket's error queue.
type TXStamp struct {
	// ID is the stamp's key (SOF_TIMESTAMPING_OPT_ID): over UDP the
	// number of datagrams sent before this one since stamping began, over
	// TCP the byte offset of the send's last byte.
	ID uint32
	// Kind is the kernel's stamp type (ee_info): unix.SCM_TSTAMP_SND for
	// the software transmit stamps this package asks for.
	Kind uint32
	// At is the software stamp, a wall-clock reading (CLOCK_REALTIME, the
	// clock of SO_TIMESTAMPNS's receive stamps).
	At time.Time
}

// ErrNotStamp is wrapped by ParseTX's error when the control messages are
// well formed but are not a transmit timestamp (an ICMP error, a stamp
// without its key).
var ErrNotStamp = errors.New("kstamp: not a transmit timestamp")

// sizes of the kernel's structures as they are laid out in control
// messages on this platform.
var (
	cmsgHdrLen   = unix.CmsgLen(0)
	timespecLen  = int(unsafe.Sizeof(unix.Timespec{}))
	extErrLen    = int(unsafe.Sizeof(unix.SockExtendedErr{}))
	scmTSLen     = 3 * timespecLen
	errQueueOOB  = unix.CmsgSpace(scmTSLen) + unix.CmsgSpace(extErrLen+unix.SizeofSockaddrInet6) + 64
	nativeEndian = binary.NativeEndian
)

// ParseTX reads the control messages of one error-queue message (a
// recvmsg(2) with MSG_ERRQUEUE): the scm_timestamping (SOL_SOCKET,
// SCM_TIMESTAMPING) whose first entry is the software stamp, and the
// sock_extended_err (IP_RECVERR or IPV6_RECVERR) whose origin is
// SO_EE_ORIGIN_TIMESTAMPING and whose ee_data is the stamp's key. It reads
// oob as bytes, never through pointers, so any input is safe. An error
// wraps ErrNotStamp when a part is missing, or says where oob is cut short.
func ParseTX(oob []byte) (TXStamp, error) {
	var (
		st              TXStamp
		haveTS, haveErr bool
	)
	for len(oob) > 0 {
		if len(oob) < cmsgHdrLen {
			return TXStamp{}, fmt.Errorf("kstamp: control message header cut at %d bytes", len(oob))
		}
		l, level, typ := cmsgHeader(oob)
		if l < cmsgHdrLen || l > len(oob) {
			return TXStamp{}, fmt.Errorf("kstamp: control message length %d out of 0..%d", l, len(oob))
		}
		data := oob[cmsgHdrLen:l]
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPING:
			if len(data) < scmTSLen {
				return TXStamp{}, fmt.Errorf("kstamp: scm_timestamping of %d bytes, want %d", len(data), scmTSLen)
			}
			st.At, haveTS = timespec(data), true
		case (level == unix.SOL_IP && typ == unix.IP_RECVERR) || (level == unix.SOL_IPV6 && typ == unix.IPV6_RECVERR):
			if len(data) < extErrLen {
				return TXStamp{}, fmt.Errorf("kstamp: sock_extended_err of %d bytes, want %d", len(data), extErrLen)
			}
			errno, origin := nativeEndian.Uint32(data[0:4]), data[4]
			if origin != unix.SO_EE_ORIGIN_TIMESTAMPING || errno != uint32(unix.ENOMSG) {
				return TXStamp{}, fmt.Errorf("%w: error origin %d, errno %d", ErrNotStamp, origin, errno)
			}
			st.Kind, st.ID, haveErr = nativeEndian.Uint32(data[8:12]), nativeEndian.Uint32(data[12:16]), true
		}
		oob = oob[min(unix.CmsgSpace(l-cmsgHdrLen), len(oob)):]
	}
	switch {
	case !haveTS:
		return TXStamp{}, fmt.Errorf("%w: no scm_timestamping", ErrNotStamp)
	case !haveErr:
		return TXStamp{}, fmt.Errorf("%w: no sock_extended_err", ErrNotStamp)
	}
	return st, nil
}

// cmsgHeader decodes a cmsghdr: its length field is a size_t (the width
// of a pointer), then two ints.
func cmsgHeader(b []byte) (l int, level, typ int32) {
	off := cmsgHdrLen - 8
	if off == 8 {
		l = int(min(nativeEndian.Uint64(b[0:8]), uint64(len(b))+1))
	} else {
		l = int(nativeEndian.Uint32(b[0:4]))
	}
	return l, int32(nativeEndian.Uint32(b[off : off+4])), int32(nativeEndian.Uint32(b[off+4 : off+8]))
}

// timespec decodes the kernel's struct timespec at the start of b.
func timespec(b []byte) time.Time {
	if timespecLen == 16 {
		return time.Unix(int64(nativeEndian.Uint64(b[0:8])), int64(nativeEndian.Uint64(b[8:16])))
	}
	return time.Unix(int64(int32(nativeEndian.Uint32(b[0:4]))), int64(int32(nativeEndian.Uint32(b[4:8]))))
}
