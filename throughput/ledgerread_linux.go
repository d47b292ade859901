//go:build linux

package throughput

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"unsafe"

	"github.com/netperfkit/netperfkit/ethtool"

	"golang.org/x/sys/unix"
)

const ledgerAvailable = true

// heldSocket is a duplicate of a test's UDP socket descriptor, taken
// before the stream's fast path detaches and later closes its own: it
// keeps the socket open until the ledger's closing reading.
type heldSocket struct{ fd int }

// holdSocket duplicates c's socket; nil when it cannot.
func holdSocket(c net.Conn) *heldSocket {
	fd, ok := dupSocket(c)
	if !ok {
		return nil
	}
	return &heldSocket{fd: fd}
}

// release closes the duplicate; a nil h is a no-op.
func (h *heldSocket) release() {
	if h != nil && h.fd >= 0 {
		_ = unix.Close(h.fd)
		h.fd = -1
	}
}

// readHostSample reads the counters of the network namespace h's socket
// lives in (SIOCGSKNS), for the interface that holds local: a test's
// socket may be in another namespace than this process (a test lab, a
// container's), and /proc/net shows the reading thread's. It never fails:
// what it cannot read is in unknown, with the reason.
func readHostSample(sock *heldSocket, local net.IP) hostSample {
	h := hostSample{vals: map[string]int64{}, unknown: map[string]string{}}
	if sock == nil || sock.fd < 0 {
		h.unknownAll("the stream's socket could not be held for reading")
		return h
	}
	nsfd, err := unix.IoctlRetInt(sock.fd, unix.SIOCGSKNS)
	if err != nil {
		h.unknownAll("network namespace of the socket: SIOCGSKNS: " + err.Error())
		return h
	}
	defer unix.Close(nsfd)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// No UnlockOSThread once the thread has joined another namespace:
		// the goroutine exits locked and the runtime ends the thread.
		runtime.LockOSThread()
		moved, err := enterNetns(nsfd)
		if err != nil {
			h.unknownAll(err.Error())
			runtime.UnlockOSThread()
			return
		}
		h.read(local)
		if !moved {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	return h
}

// enterNetns moves the locked calling thread into nsfd's namespace unless
// it is there already; moved says whether it did.
func enterNetns(nsfd int) (moved bool, _ error) {
	var want, have unix.Stat_t
	if err := unix.Fstat(nsfd, &want); err != nil {
		return false, fmt.Errorf("netns: %w", err)
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &have); err == nil && have.Dev == want.Dev && have.Ino == want.Ino {
		return false, nil
	}
	if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
		return false, fmt.Errorf("setns into the socket's network namespace: %w", err)
	}
	return true, nil
}

// read fills h from the calling thread's namespace.
func (h *hostSample) read(local net.IP) {
	h.iface = ifaceOf(local)
	const proc = "/proc/thread-self/net/"
	if f, err := os.Open(proc + "dev"); err == nil {
		m, perr := parseNetDev(f)
		f.Close()
		d, ok := m[h.iface]
		switch {
		case perr != nil:
			h.unknown[ctrRxDrop], h.unknown[ctrTxDrop] = perr.Error(), perr.Error()
		case !ok:
			why := "no interface holds " + local.String()
			h.unknown[ctrRxDrop], h.unknown[ctrTxDrop] = why, why
		default:
			h.vals[ctrRxDrop], h.vals[ctrTxDrop] = d.RxDrop, d.TxDrop
		}
	}
	snmpFile := "snmp"
	prefix := ""
	if local.To4() == nil {
		snmpFile, prefix = "snmp6", "6"
	}
	h.readFile(proc+snmpFile, func(f *os.File) error {
		m, err := parseSNMP(f)
		if err != nil {
			return err
		}
		h.vals[ctrReasm], h.vals[ctrRcvbuf] = m["Ip"+prefix+"ReasmFails"], m["Udp"+prefix+"RcvbufErrors"]
		return nil
	}, ctrReasm, ctrRcvbuf)
	h.readFile(proc+"softnet_stat", func(f *os.File) (err error) {
		h.vals[ctrSoftnet], err = parseSoftnet(f)
		return err
	}, ctrSoftnet)
	h.readFile(proc+"stat/nf_conntrack", func(f *os.File) (err error) {
		h.vals[ctrConntrack], err = parseConntrackStat(f)
		return err
	}, ctrConntrack)
	h.readAllowance()
}

// readFile opens name and parses it with parse, or marks keys unknown.
func (h *hostSample) readFile(name string, parse func(*os.File) error, keys ...string) {
	f, err := os.Open(name)
	if err == nil {
		err = parse(f)
		f.Close()
	}
	if err == nil {
		return
	}
	why := err.Error()
	if errors.Is(err, os.ErrNotExist) && keys[0] == ctrConntrack {
		why = "nf_conntrack is not loaded in this network namespace"
	}
	for _, k := range keys {
		delete(h.vals, k)
		h.unknown[k] = why
	}
}

// readAllowance reads the ENA allowance counters of h.iface (package
// ethtool, whose socket the calling thread opens in its namespace).
func (h *hostSample) readAllowance() {
	keys := []string{ctrBWIn, ctrBWOut, ctrPPS, ctrConntrackAl, ctrLinklocal}
	set := func(why string) {
		for _, k := range keys {
			h.unknown[k] = why
		}
	}
	if h.iface == "" {
		set("no interface")
		return
	}
	c, err := ethtool.New()
	if err != nil {
		set(err.Error())
		return
	}
	defer c.Close()
	s, err := c.Snapshot(h.iface)
	if err != nil {
		set(h.iface + ": no NIC statistics (" + err.Error() + ")")
		return
	}
	a, ok := s.Stats.Allowance()
	if !ok {
		set(h.iface + ": " + s.Driver + " has no allowance counters (not ENA)")
		return
	}
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		h.vals[keys[i]] = int64(v)
	}
}

// ifaceOf names the interface that holds ip in the calling thread's
// namespace, "" when none does.
func ifaceOf(ip net.IP) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ifc.Name
			}
		}
	}
	if ip.IsLoopback() {
		return "lo"
	}
	return ""
}

// drops is SO_MEMINFO's SK_MEMINFO_DROPS of the held socket: the
// datagrams the kernel dropped on it since it was made (a full receive
// buffer, a bad checksum). Read after the socket is drained, it misses
// none, where SO_RXQ_OVFL arrives only with a later datagram.
func (h *heldSocket) drops() (int64, bool) {
	if h == nil || h.fd < 0 {
		return 0, false
	}
	var mem [unix.SK_MEMINFO_VARS]uint32
	l := uint32(len(mem) * 4)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(h.fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, false
	}
	return int64(mem[unix.SK_MEMINFO_DROPS]), true
}
