// Package gomaxprocs sets GOMAXPROCS for a stretch of work and restores it
// so that the runtime's own updates resume: since Go 1.25 an explicit
// runtime.GOMAXPROCS call turns off the updates that follow the process's
// CPU limit, which a save-and-restore through runtime.GOMAXPROCS(old)
// leaves off for the rest of the process.
package gomaxprocs

import (
	"os"
	"runtime"
)

// Set sets GOMAXPROCS to n and returns what restores it. With n 0 or less,
// or what GOMAXPROCS is already, it changes nothing, and leaves the
// runtime's own updates on. The restore goes back to the runtime's default
// when GOMAXPROCS is not in the environment, so that its updates resume,
// and to the value before otherwise.
func Set(n int) (restore func()) {
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
