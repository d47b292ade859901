package cachetest_test

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// The parent-death signal is tied to the forking thread (Go issue 27505):
// a server started from a goroutine that locks its thread and returns
// locked, which ends the thread, must keep running.
func TestServerOutlivesStartingThread(t *testing.T) {
	peertest.Binary(t, peertest.CacheInstallHint, "valkey-server", "redis-server")
	// Locked, this goroutine's thread cannot run the starter below while
	// it waits, so the starter lands on another thread; the runtime never
	// ends the main thread, so a starter that lands there tries again.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type started struct {
		s    *cachetest.Server
		err  error
		main bool
	}
	var got started
	for range 50 {
		done := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // unlocked only on the main thread: this thread ends with the goroutine
			if syscall.Gettid() == syscall.Getpid() {
				runtime.UnlockOSThread()
				done <- started{main: true}
				return
			}
			s, err := cachetest.Start(context.Background(), nil)
			done <- started{s: s, err: err}
		}()
		if got = <-done; !got.main {
			break
		}
	}
	if got.main {
		t.Skip("the starter always ran on the main thread, which the runtime never ends")
	}
	require.NoError(t, got.err)
	s := got.s
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	// The thread's exit, and the signal it would send, follow the
	// goroutine's end closely; ask a few times.
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		require.Equal(t, []string{"+PONG"}, inline(t, s, s.Addr, nil, "PING"))
	}
}
