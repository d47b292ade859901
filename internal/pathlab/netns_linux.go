//go:build linux

package pathlab

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a thread inside h's namespace and waits for it. Sockets fn
// opens on its own goroutine stay in the namespace after it returns, so a
// test listens or dials inside Do and then serves or runs outside it; a
// goroutine fn starts may run on a thread outside the namespace. The
// thread is discarded afterwards rather than returned to the scheduler in
// the wrong namespace.
func (h *Host) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// No UnlockOSThread: the goroutine exits locked, so the runtime
		// ends the thread instead of reusing it.
		runtime.LockOSThread()
		f, err := os.Open(h.NetnsPath())
		if err != nil {
			errc <- fmt.Errorf("pathlab: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("pathlab: setns %s: %w", h.Netns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
