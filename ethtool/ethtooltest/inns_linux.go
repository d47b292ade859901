//go:build linux

package ethtooltest

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs fn on a thread that has joined the network namespace named by
// path and waits for it. Sockets fn opens stay in that namespace after it
// returns, which is how a test gets an ethtool.Client for a namespace. The
// thread is discarded afterwards rather than returned to the scheduler in the
// wrong namespace. A nil fn or an empty path is an error.
func InNetns(path string, fn func() error) error {
	if fn == nil {
		return errors.New("ethtooltest: InNetns: nil fn")
	}
	if path == "" {
		return errors.New("ethtooltest: InNetns: empty path")
	}
	errc := make(chan error, 1)
	go func() {
		// No UnlockOSThread: the goroutine exits locked, so the runtime
		// terminates the thread instead of reusing it.
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("ethtooltest: %w", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("ethtooltest: setns %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
