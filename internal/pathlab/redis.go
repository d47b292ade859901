package pathlab

import (
	"strconv"
	"testing"
	"time"
)

// Redis starts the redis-server (or valkey-server) bin in h's namespace,
// listening on h.Addr at port with nothing saved to disk, protected mode
// off (its clients are the lab's other host) and extra arguments after
// those, and waits until it listens. It stops when the test ends; its
// output is logged if the test failed. The namespace is the test's own, so
// a fixed port is free.
func (h *Host) Redis(tb testing.TB, bin string, port int, extra ...string) {
	tb.Helper()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", h.Addr.String(), "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", tb.TempDir()}, extra...)
	h.Start(tb, bin, args...)
	h.WaitListening(tb, port, 10*time.Second)
}
