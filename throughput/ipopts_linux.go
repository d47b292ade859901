//go:build linux

package throughput

import (
	"time"

	"golang.org/x/sys/unix"
)

const (
	dontFragmentAvailable = true
	userTimeoutAvailable  = true
	bindDeviceAvailable   = true
)

// setBindToDevice is SO_BINDTODEVICE (iperf3 --bind-dev).
func setBindToDevice(fd uintptr, dev string) error {
	return unix.BindToDevice(int(fd), dev)
}

// setDontFragment sets the IPv4 DF bit on every datagram (path MTU
// discovery "do"), as iperf3 --dont-fragment does.
func setDontFragment(fd uintptr) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
}

// setUserTimeout bounds how long sent data may stay unacknowledged before
// the kernel drops the connection (iperf3 --snd-timeout).
func setUserTimeout(fd uintptr, d time.Duration) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d/time.Millisecond))
}

// tcpMSS is a connected TCP socket's MSS (TCP_MAXSEG), 0 when unknown.
func tcpMSS(fd uintptr) int {
	v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG)
	if err != nil {
		return 0
	}
	return v
}
