package throughput

import (
	"fmt"
	"net"
	"syscall"
)

// controlExtra applies the options of the issue-11 block (TOS, don't
// fragment, send timeout) to a new socket of network ("tcp" or "udp") to
// or from a peer at ip. Options the platform lacks are skipped here and
// reported as notes by ipOptsNotAvailable.
func controlExtra(c *Config, network string, v6 bool, fd uintptr) error {
	if c.TOS > 0 {
		if err := setTOS(fd, v6, c.TOS); err != nil {
			return fmt.Errorf("throughput: TOS %d: %w", c.TOS, err)
		}
	}
	if c.DontFragment && network == "udp" && !v6 {
		if err := setDontFragment(fd); err != nil && err != errNotAvailable {
			return fmt.Errorf("throughput: don't fragment: %w", err)
		}
	}
	if c.SendTimeout > 0 && network == "tcp" {
		if err := setUserTimeout(fd, c.SendTimeout); err != nil && err != errNotAvailable {
			return fmt.Errorf("throughput: TCP_USER_TIMEOUT: %w", err)
		}
	}
	return nil
}

// dialControl is a net.Dialer Control that applies controlExtra and then
// more (nil for nothing more).
func dialControl(c *Config, more func(fd uintptr) error) func(network, address string, rc syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error {
		v6 := false
		if host, _, err := net.SplitHostPort(address); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
				v6 = true
			}
		}
		kind := "tcp"
		if len(network) >= 3 && network[:3] == "udp" {
			kind = "udp"
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = bindDevice(c, fd)
			if serr == nil && more != nil {
				serr = more(fd)
			}
			if serr == nil {
				serr = controlExtra(c, kind, v6, fd)
			}
		}); err != nil {
			return err
		}
		return serr
	}
}

// applyExtra applies controlExtra to an accepted or connected socket.
func applyExtra(c *Config, conn net.Conn, network string) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	v6 := false
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok && a.IP.To4() == nil {
		v6 = true
	}
	if a, ok := conn.RemoteAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		v6 = true
	}
	_ = rc.Control(func(fd uintptr) { _ = controlExtra(c, network, v6, fd) })
}

// ipOptsNotAvailable lists the requested options this platform cannot apply.
func ipOptsNotAvailable(c *Config) []string {
	var n []string
	if c.TOS > 0 && !tosAvailable {
		n = append(n, "tos: not available on this platform")
	}
	if c.DontFragment && !dontFragmentAvailable {
		n = append(n, "dont_fragment: not available on this platform")
	}
	if c.SendTimeout > 0 && !userTimeoutAvailable {
		n = append(n, "snd_timeout: not available on this platform")
	}
	if c.FlowLabel != 0 && !flowLabelAvailable {
		n = append(n, "flowlabel: not available on this platform")
	}
	return n
}

// noteFlowLabelIPv4 is the note of a UDP test with a flow label over IPv4,
// which runs without it as 3.21's does.
const noteFlowLabelIPv4 = "flowlabel: an IPv4 test carries none"

// ctrlControl is the control connection's Control: the send timeout only
// (TOS and don't-fragment are for the data streams, as in iperf3).
func ctrlControl(c *Config) func(network, address string, rc syscall.RawConn) error {
	if c.SendTimeout <= 0 && c.BindDevice == "" {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			if serr = bindDevice(c, fd); serr != nil || c.SendTimeout <= 0 {
				return
			}
			if err := setUserTimeout(fd, c.SendTimeout); err != nil && err != errNotAvailable {
				serr = fmt.Errorf("throughput: TCP_USER_TIMEOUT: %w", err)
			}
		}); err != nil {
			return err
		}
		return serr
	}
}

// connMSS is a TCP connection's MSS (linux), 0 when unknown.
func connMSS(c net.Conn) int {
	sc, ok := tcpSocket(c)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	mss := 0
	_ = rc.Control(func(fd uintptr) { mss = tcpMSS(fd) })
	return mss
}

// maxIfaceName is the longest interface name the kernel takes (IFNAMSIZ-1).
const maxIfaceName = 15

// bindDevice binds a socket to Config.BindDevice, when set.
func bindDevice(c *Config, fd uintptr) error {
	return bindToDevice(fd, c.BindDevice)
}

// bindToDevice binds fd to the interface dev (SO_BINDTODEVICE); "" does
// nothing.
func bindToDevice(fd uintptr, dev string) error {
	if dev == "" {
		return nil
	}
	if err := setBindToDevice(fd, dev); err != nil {
		return fmt.Errorf("throughput: bind to device %s: %w", dev, err)
	}
	return nil
}
