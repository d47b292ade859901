//go:build !linux

package throughput

import (
	"net"
	"runtime"

	"github.com/netperfkit/netperfkit/internal/flowmodel"
)

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

// dataPathNotAvailable lists the data-path options c asks for that this
// platform lacks: all but the portable paths.
func dataPathNotAvailable(c *Config) []string {
	var n []string
	if c.UDP && (flowmodel.On(c.GSO) || flowmodel.On(c.GRO)) {
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

// readHostSample knows no counters off linux: every line of the ledger
// that the host would tell is unknown.
func readHostSample(*heldSocket, net.IP) hostSample {
	h := hostSample{vals: map[string]int64{}, unknown: map[string]string{}}
	h.unknownAll("not available on " + runtime.GOOS)
	return h
}
