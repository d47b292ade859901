//go:build linux

package latency

import (
	"encoding/binary"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// pinned answers each datagram of a UDP socket bound to a wildcard address
// from the address the datagram was sent to. Without it the kernel picks
// the reply's source by route, the host's primary address, and a client
// that asked a secondary address (another ENI's, or an alias) drops the
// reply on its connected socket. The socket asks for each datagram's
// destination (IPV6_RECVPKTINFO on Go's dual-stack AF_INET6 socket, where
// IPv4 clients' arrive as ::ffff:a.b.c.d; IP_PKTINFO on an AF_INET one) and
// each reply carries it back as its source (IPV6_PKTINFO, or IP_PKTINFO's
// ipi_spec_dst). It costs no system call beyond recvmsg and sendmsg in
// place of recvfrom and sendto, and no allocation: both control buffers are
// reused, the reply's built once with only its address rewritten.
type pinned struct {
	uc  *net.UDPConn
	rx  []byte // control messages of the last read
	tx  []byte // the reply's control message
	v6  bool
	dst netip.Addr // destination of the last datagram read; invalid when unknown
}

// pin returns the pinning reader and writer of uc, or nil when uc is bound
// to a specific address (its replies leave from it already) or the socket
// refuses the option.
func pin(uc *net.UDPConn) *pinned {
	la, ok := uc.LocalAddr().(*net.UDPAddr)
	if !ok || !la.IP.IsUnspecified() {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	var domain int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if domain, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN); serr != nil {
			return
		}
		if domain == unix.AF_INET6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
		} else {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		}
	}); err != nil || serr != nil {
		return nil
	}
	p := &pinned{uc: uc, rx: make([]byte, 128), v6: domain == unix.AF_INET6}
	if p.v6 {
		p.tx = putCmsgHeader(make([]byte, unix.CmsgSpace(unix.SizeofInet6Pktinfo)), unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, unix.SizeofInet6Pktinfo)
	} else {
		p.tx = putCmsgHeader(make([]byte, unix.CmsgSpace(unix.SizeofInet4Pktinfo)), unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo)
	}
	return p
}

// read reads one datagram into b and keeps its destination address.
func (p *pinned) read(b []byte) (int, netip.AddrPort, error) {
	n, oobn, _, from, err := p.uc.ReadMsgUDPAddrPort(b, p.rx)
	if err != nil {
		return n, from, err
	}
	p.dst, _ = parsePktinfo(p.rx[:oobn])
	return n, from, nil
}

// write sends b to "to" from the destination of the datagram read last (by
// route when it is not known).
func (p *pinned) write(b []byte, to netip.AddrPort) error {
	c := p.control()
	if c == nil {
		_, err := p.uc.WriteToUDPAddrPort(b, to)
		return err
	}
	_, _, err := p.uc.WriteMsgUDPAddrPort(b, c, to)
	return err
}

// control returns the reply's control message, which sends it from the
// destination of the datagram read last; nil when that is not known (the
// reply then leaves by route).
func (p *pinned) control() []byte {
	data := p.tx[unix.CmsgLen(0):]
	switch {
	case !p.dst.IsValid():
		return nil
	case p.v6:
		a := p.dst.As16() // an IPv4 address as ::ffff:a.b.c.d, as it came
		copy(data[:16], a[:])
	default:
		if !p.dst.Unmap().Is4() {
			return nil
		}
		a := p.dst.Unmap().As4()
		copy(data[4:8], a[:]) // ipi_spec_dst; ipi_ifindex and ipi_addr stay 0
	}
	return p.tx
}

// cmsgLenSize is the size of struct cmsghdr's cmsg_len (a size_t); level
// and type, two ints, follow it.
const cmsgLenSize = unix.SizeofCmsghdr - 8

// cmsgAlign rounds n up to the alignment of control messages (a long).
func cmsgAlign(n int) int {
	const a = unix.SizeofPtr
	return (n + a - 1) &^ (a - 1)
}

// putCmsgHeader writes a control message header for datalen bytes of
// level and typ at the start of b, and returns b.
func putCmsgHeader(b []byte, level, typ int32, datalen int) []byte {
	n := uint64(unix.CmsgLen(datalen))
	if cmsgLenSize == 8 {
		binary.NativeEndian.PutUint64(b, n)
	} else {
		binary.NativeEndian.PutUint32(b, uint32(n))
	}
	binary.NativeEndian.PutUint32(b[cmsgLenSize:], uint32(level))
	binary.NativeEndian.PutUint32(b[cmsgLenSize+4:], uint32(typ))
	return b
}

// parsePktinfo returns the destination address a datagram's control
// messages (oob, as recvmsg filled them) carry: IPV6_PKTINFO's ipi6_addr
// (an IPv4 one as ::ffff:a.b.c.d) or IP_PKTINFO's ipi_spec_dst, the local
// address the kernel matched. It reads without allocating and stops at the
// first malformed header.
func parsePktinfo(oob []byte) (netip.Addr, bool) {
	for len(oob) >= unix.SizeofCmsghdr {
		var n uint64
		if cmsgLenSize == 8 {
			n = binary.NativeEndian.Uint64(oob)
		} else {
			n = uint64(binary.NativeEndian.Uint32(oob))
		}
		if n < unix.SizeofCmsghdr || n > uint64(len(oob)) {
			return netip.Addr{}, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		data := oob[cmsgAlign(unix.SizeofCmsghdr):n]
		switch {
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			return netip.AddrFrom16([16]byte(data[:16])), true
		case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			return netip.AddrFrom4([4]byte(data[4:8])), true
		}
		next := cmsgAlign(int(n))
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return netip.Addr{}, false
}
