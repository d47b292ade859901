package peertest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Context returns a context that ends after d or when the test ends,
// whichever comes first.
func Context(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// iperf3Starts is how many free ports IPerf3Server tries before it gives up.
const iperf3Starts = 6

// IPerf3Server starts `bin -s` (a stock iperf3, or one built from this
// repository) bound to host ("127.0.0.1", or "::1" for IPv6) on a free port,
// with extra arguments after its own, and returns its address once it
// listens; the server is killed when the test ends, and its output logged if
// the test failed. The port is picked afresh when another process takes it
// first. It fails tb when the server does not start, and returns "" for an
// empty bin (a peer that Binary or NewIPerf3 did not find).
func IPerf3Server(tb testing.TB, bin, host string, extra ...string) string {
	tb.Helper()
	if bin == "" {
		return ""
	}
	for range iperf3Starts {
		if addr, ok := tryIPerf3Server(tb, bin, host, extra); ok {
			return addr
		}
	}
	tb.Fatalf("peertest: %s -s did not start on %s in %d tries", bin, host, iperf3Starts)
	return ""
}

func tryIPerf3Server(tb testing.TB, bin, host string, extra []string) (string, bool) {
	tb.Helper()
	port := FreePort(tb)
	args := append([]string{"-s", "-B", host, "-p", strconv.Itoa(port)}, extra...)
	cmd := exec.Command(bin, args...)
	var out Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("peertest: %s: %v", bin, err)
		return "", false
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if !held(addr, exited) {
		_ = cmd.Process.Kill()
		<-exited
		tb.Logf("peertest: %s -s on %s did not listen: %s", bin, addr, out.String())
		return "", false
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if tb.Failed() {
			tb.Logf("iperf3 server output:\n%s", out.String())
		}
	})
	return addr, true
}

// held waits, 5 s at most, until a process holds addr, without connecting
// (iperf3 counts a bare connection as a failed test): it looks from the
// outside whether the port can still be bound. It reports false when the
// process exited first, or exits right after the port was taken.
func held(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		// Someone holds the port: the server, unless it exits right away.
		select {
		case <-exited:
			return false
		case <-time.After(50 * time.Millisecond):
			return true
		}
	}
	return false
}
