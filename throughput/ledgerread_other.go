//go:build !linux

package throughput

import (
	"net"
	"runtime"
)

const ledgerAvailable = false

// heldSocket is linux's; elsewhere there is nothing to hold.
type heldSocket struct{}

func holdSocket(net.Conn) *heldSocket { return nil }

func (h *heldSocket) release() {}

func (h *heldSocket) drops() (int64, bool) { return 0, false }

// readHostSample knows no counters off linux.
func readHostSample(*heldSocket, net.IP) hostSample {
	h := hostSample{vals: map[string]int64{}, unknown: map[string]string{}}
	h.unknownAll("not available on " + runtime.GOOS)
	return h
}
