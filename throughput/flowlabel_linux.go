//go:build linux

package throughput

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const flowLabelAvailable = true

// linux/in6.h's flow label manager, which x/sys/unix does not define.
const (
	ipv6FlowLabelMgr = 32  // IPV6_FLOWLABEL_MGR
	ipv6FlowInfoSend = 33  // IPV6_FLOWINFO_SEND
	flActionGet      = 0   // IPV6_FL_A_GET
	flFlagCreate     = 1   // IPV6_FL_F_CREATE
	flShareAny       = 255 // IPV6_FL_S_ANY
	flowLabelReqLen  = 32  // sizeof(struct in6_flowlabel_req)
)

// setFlowLabel leases label for packets to dst on socket fd and makes the
// socket take its flow label from the address it connects to, as 3.21's
// iperf_tcp_connect does: the label takes effect at connectFlow. Any
// socket of the host may share the lease (IPV6_FL_S_ANY), so a client and
// a server on one host can both use it.
func setFlowLabel(fd uintptr, dst netip.Addr, label int) error {
	// struct in6_flowlabel_req: flr_dst, flr_label (network order),
	// flr_action, flr_share, flr_flags (host order), expiry and linger 0.
	var req [flowLabelReqLen]byte
	a16 := dst.As16()
	copy(req[:16], a16[:])
	binary.BigEndian.PutUint32(req[16:], uint32(label&maxFlowLabel))
	req[20], req[21] = flActionGet, flShareAny
	binary.NativeEndian.PutUint16(req[22:], flFlagCreate)
	if err := unix.SetsockoptString(int(fd), unix.IPPROTO_IPV6, ipv6FlowLabelMgr, string(req[:])); err != nil {
		return fmt.Errorf("%w %#x: IPV6_FLOWLABEL_MGR: %w", ErrFlowLabel, label, err)
	}
	if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, ipv6FlowInfoSend, 1); err != nil {
		return fmt.Errorf("%w %#x: IPV6_FLOWINFO_SEND: %w", ErrFlowLabel, label, err)
	}
	return nil
}

// connectFlow connects fd to ap with label in sin6_flowinfo, which the
// net package's connect leaves 0; a non-blocking TCP connect returns
// while the handshake is in progress.
func connectFlow(fd uintptr, ap netip.AddrPort, label int) error {
	sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	binary.BigEndian.PutUint32((*[4]byte)(unsafe.Pointer(&sa.Flowinfo))[:], uint32(label&maxFlowLabel))
	if z := ap.Addr().Zone(); z != "" {
		sa.Scope_id = zoneIndex(z)
	}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	switch errno {
	case 0, unix.EINPROGRESS, unix.EINTR:
		return nil
	}
	return os.NewSyscallError("connect", errno)
}

// zoneIndex is the interface index of an IPv6 zone ("eth0" or "2").
func zoneIndex(zone string) uint32 {
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	n, _ := strconv.ParseUint(zone, 10, 32)
	return uint32(n)
}

// labelTCPDial makes d's connections carry c.FlowLabel from their first
// packet: its Control leases the label, binds the local address itself
// (connect would bind before the net package's bind) and connects with the
// label in the address. The net package's own connect then finds the
// connection in progress (EALREADY) or made (EISCONN) and waits for it as
// for its own. A stream to an IPv4 address fails with ErrFlowLabel, as in
// 3.21.
func labelTCPDial(c *Config, d *net.Dialer) {
	if c.FlowLabel == 0 {
		return
	}
	inner, laddr, label := d.Control, d.LocalAddr, c.FlowLabel
	d.LocalAddr = nil
	d.Control = func(network, address string, rc syscall.RawConn) error {
		if inner != nil {
			if err := inner(network, address, rc); err != nil {
				return err
			}
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || network == "tcp4" || !ap.Addr().Is6() || ap.Addr().Is4In6() {
			return fmt.Errorf("%w %#x: %s is an IPv4 address", ErrFlowLabel, label, address)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			if serr = setFlowLabel(fd, ap.Addr(), label); serr == nil {
				serr = bindTCP(fd, laddr)
			}
			if serr == nil {
				serr = connectFlow(fd, ap, label)
			}
		}); err != nil {
			return err
		}
		return serr
	}
}

// bindTCP binds fd to a, when a is set, as the net package's dial would.
func bindTCP(fd uintptr, a net.Addr) error {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return nil
	}
	sa := &unix.SockaddrInet6{Port: ta.Port}
	if ta.IP != nil {
		copy(sa.Addr[:], ta.IP.To16())
	}
	if err := unix.Bind(int(fd), sa); err != nil {
		return os.NewSyscallError("bind", err)
	}
	return nil
}

// labelUDP connects a UDP socket, already connected to peer, again with
// label in the address, so that every datagram it sends carries the label.
// It does nothing (false) when peer is an IPv4 address.
func labelUDP(uc *net.UDPConn, peer *net.UDPAddr, label int) (bool, error) {
	ap := peer.AddrPort()
	if label == 0 || !ap.Addr().Is6() || ap.Addr().Is4In6() {
		return false, nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return false, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = setFlowLabel(fd, ap.Addr(), label); serr == nil {
			if serr = connectFlow(fd, ap, label); serr != nil {
				serr = fmt.Errorf("%w %#x: %w", ErrFlowLabel, label, serr)
			}
		}
	}); err != nil {
		return false, err
	}
	return serr == nil, serr
}
