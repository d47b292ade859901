package cachecli

import (
	"os"

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
