package cachecli

import (
	"os"
	"runtime"

	"github.com/netperfkit/netperfkit/cache"
)

// Procs is the GOMAXPROCS a tool runs w with, given its -procs flag: the
// flag when positive; 0 (leave it) when the flag is negative or the user
// set GOMAXPROCS in the environment; else cache.Procs's suggestion.
func Procs(flag int, w *cache.WorkloadConfig) int {
	switch {
	case flag > 0:
		return flag
	case flag < 0 || os.Getenv("GOMAXPROCS") != "":
		return 0
	}
	return cache.Procs(w)
}

// SetProcs sets GOMAXPROCS to n and returns what restores it. With n 0, or
// what GOMAXPROCS is already, it changes nothing, and leaves the runtime's
// own updates (as the CPU limit changes) on. The restore goes back to the
// runtime's default when GOMAXPROCS is not in the environment, so that its
// updates resume.
func SetProcs(n int) (restore func()) {
	old := runtime.GOMAXPROCS(0)
	if n <= 0 || n == old {
		return func() {}
	}
	runtime.GOMAXPROCS(n)
	if os.Getenv("GOMAXPROCS") == "" {
		return runtime.SetDefaultGOMAXPROCS
	}
	return func() { runtime.GOMAXPROCS(old) }
}
