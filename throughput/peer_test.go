package throughput

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startIperf3Server starts a stock `iperf3 -s` on a free loopback port and
// returns its address; the server is killed when the test ends. The port is
// picked afresh when another process takes it first.
func startIperf3Server(t testing.TB, extra ...string) string {
	t.Helper()
	return startIperf3ServerBin(t, peertest.Binary(t, "apt-get install iperf3", "iperf3"), extra...)
}

func startIperf3ServerBin(t testing.TB, bin string, extra ...string) string {
	t.Helper()
	return startIperf3ServerOn(t, bin, "127.0.0.1", extra...)
}

// startIperf3ServerOn is startIperf3ServerBin bound to host ("::1" for IPv6).
func startIperf3ServerOn(t testing.TB, bin, host string, extra ...string) string {
	t.Helper()
	return peertest.IPerf3Server(t, bin, host, extra...)
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// runRetry runs a test, retrying while a stock iperf3 server still refuses
// new tests because it is cleaning up the previous one.
func runRetry(t testing.TB, addr string, cfg *Config) (*Result, error) {
	t.Helper()
	return runRetryCtx(t, context.Background(), addr, cfg)
}

// runRetryCtx is runRetry under parent.
func runRetryCtx(t testing.TB, parent context.Context, addr string, cfg *Config) (*Result, error) {
	t.Helper()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(parent, 60*time.Second)
		res, err := Run(ctx, addr, cfg)
		cancel()
		// It also closes its listener between tests, resetting connections
		// that were queued on it: a reset before any stream was set up.
		handshakeReset := errors.Is(err, syscall.ECONNRESET) && res != nil && len(res.Streams) == 0
		if (stockServerBusy(err) || handshakeReset) && i < 30 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return res, err
	}
}

// stockServerBusy reports whether err is how a stock iperf3 -s turns a client
// away between tests: ACCESS_DENIED while a test runs, and a refused or reset
// connect while it closes and reopens its listener.
func stockServerBusy(err error) bool {
	if errors.Is(err, ErrAccessDenied) && !errors.Is(err, ErrAuthFailed) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" &&
		(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET))
}

func TestStockServerBusy(t *testing.T) {
	dial := func(errno syscall.Errno) error {
		return fmt.Errorf("throughput: connect x: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)})
	}
	assert.True(t, stockServerBusy(fmt.Errorf("x: %w", ErrAccessDenied)))
	assert.True(t, stockServerBusy(dial(syscall.ECONNREFUSED)))
	assert.True(t, stockServerBusy(dial(syscall.ECONNRESET)))
	assert.False(t, stockServerBusy(dial(syscall.ETIMEDOUT)))
	assert.False(t, stockServerBusy(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), "a reset during a test is a failure")
	assert.False(t, stockServerBusy(nil))
}

// TestBusyStockServerReadsAsBusy: a stock 3.21 server whose one test slot
// is taken answers a second client with ACCESS_DENIED, which 3.21's own
// client prints as "the server is busy running a test"; Run says the same
// (issue 39), and the error still matches ErrAccessDenied.
func TestBusyStockServerReadsAsBusy(t *testing.T) {
	addr := startIperf3ServerBin(t, peertest.NewIPerf3(t))
	ctx, cancel := context.WithCancel(ctxT(t, 60*time.Second))
	defer cancel()
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := runRetryCtx(t, ctx, addr, &Config{Duration: time.Minute, Interval: -1,
			OnEvent: func(ev Event) {
				if ev.Kind == EventStart {
					once.Do(func() { close(started) })
				}
			}})
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("the first test ended before it started: %v", err)
	}
	_, err := Run(ctxT(t, 20*time.Second), addr, &Config{Duration: time.Second})
	require.ErrorIs(t, err, ErrAccessDenied)
	assert.NotErrorIs(t, err, ErrAuthFailed)
	assert.ErrorContains(t, err, "the server is busy running a test")
	cancel()
	<-first
}
