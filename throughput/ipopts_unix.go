//go:build unix

package throughput

import "syscall"

const tosAvailable = true

// setTOS sets the IPv4 TOS byte or the IPv6 traffic class.
func setTOS(fd uintptr, v6 bool, tos int) error {
	if v6 {
		return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_TCLASS, tos)
	}
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, tos)
}
