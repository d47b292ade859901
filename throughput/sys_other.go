//go:build !linux

package throughput

import (
	"net"
	"syscall"
)

const tcpInfoAvailable = false

// readTCPInfo reports that TCP_INFO is not available off linux.
func readTCPInfo(net.Conn) (tcpInfo, error) { return tcpInfo{}, ErrNotAvailable }

// controlTCP applies the portable options; MSS and congestion are linux-only.
func controlTCP(fd uintptr, o sockOpts) error {
	if o.window > 0 {
		if err := setBufs(fd, o.window); err != nil {
			return err
		}
	}
	return nil
}

// optsNotAvailable lists requested options this platform cannot apply.
func optsNotAvailable(o sockOpts) []string {
	var n []string
	if o.mss > 0 {
		n = append(n, "mss: not available on this platform")
	}
	if o.congestion != "" {
		n = append(n, "congestion: not available on this platform")
	}
	return n
}

func forceBuffers(syscall.Conn, int, int) {}

func socketBuffers(syscall.Conn) (snd, rcv int) { return 0, 0 }

func tcpCongestion(net.Conn) string { return "" }
