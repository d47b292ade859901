//go:build !linux

package throughput

import (
	"net"
	"os"
	"sync/atomic"
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

// newSleeper returns the pacer's sleeper; off linux it is coarseSleep.
func newSleeper(quit <-chan struct{}) sleeper { return coarseSleep{quit: quit} }

func setPacingRate(syscall.Conn, float64) error { return ErrNotAvailable }

// dataPathNotAvailable lists the data-path options c asks for that this
// platform lacks: all but the portable paths.
func dataPathNotAvailable(c *Config) []string {
	var n []string
	if c.UDP && (c.GSO == OffloadOn || c.GRO == OffloadOn) {
		n = append(n, "gso/gro: not available on this platform")
	}
	if c.SkipRxCopy {
		n = append(n, "skip_rx_copy: not available on this platform")
	}
	if c.ZeroCopy && !c.UDP {
		n = append(n, "zerocopy: not available on this platform")
	}
	if c.FQRate > 0 {
		n = append(n, "fq_rate: not available on this platform")
	}
	return n
}

type truncReader struct{}

func newTruncReader(net.Conn, []byte) (*truncReader, error) { return nil, ErrNotAvailable }

func (*truncReader) read() (int, error) { return 0, ErrNotAvailable }

type fileSender struct{}

func newFileSender(net.Conn, []byte) (*fileSender, error) { return nil, ErrNotAvailable }

func (*fileSender) write() (int, error) { return 0, ErrNotAvailable }

func (*fileSender) close() {}

const sendfileAvailable = false

func sendFileAt(syscall.RawConn, *os.File, int64, int) (int, error) { return 0, ErrNotAvailable }

// setRcvLowat is linux-only here: elsewhere reads wake per arrival.
func setRcvLowat(syscall.Conn, int) error { return ErrNotAvailable }

// udpSender is linux-only: elsewhere a UDP sender writes through c.
func udpSender(net.Conn, *atomic.Bool) (func([]byte) (int, error), func(), bool) {
	return nil, nil, false
}
