package underload_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/require"
)

// ctxT is a context that ends after d or with the test.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startIperf3ServerBin starts `bin -s` on a free loopback port and returns
// its address; the server is killed when the test ends. The port is picked
// afresh when another process takes it first.
func startIperf3ServerBin(t testing.TB, bin string, extra ...string) string {
	t.Helper()
	host := "127.0.0.1"
	for attempt := 0; ; attempt++ {
		if addr, ok := tryIperf3Server(t, bin, host, extra); ok {
			return addr
		}
		if attempt == 5 {
			t.Fatal("iperf3 -s did not start")
		}
	}
}

func tryIperf3Server(t testing.TB, bin, host string, extra []string) (string, bool) {
	port := peertest.FreePort(t)
	args := append([]string{"-s", "-B", host, "-p", strconv.Itoa(port)}, extra...)
	cmd := exec.Command(bin, args...)
	var out peertest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	// Wait until it listens by looking at the port from the outside without
	// connecting (a bare connection would count as a failed test for it).
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Logf("iperf3 -s on %s exited: %s", addr, out.String())
			return "", false
		default:
		}
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		// Someone holds the port: iperf3, unless it exits right away.
		select {
		case <-exited:
			t.Logf("iperf3 -s on %s exited: %s", addr, out.String())
			return "", false
		case <-time.After(50 * time.Millisecond):
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("iperf3 server output:\n%s", out.String())
			}
		})
		return addr, true
	}
	_ = cmd.Process.Kill()
	<-exited
	return "", false
}
