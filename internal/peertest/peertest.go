// Package peertest decides what an integration test does when the real peer it
// needs (a binary such as iperf3, sockperf or redis-server, or root for network
// namespaces) is missing: it skips with a clear message on a developer's laptop,
// and fails when NETPERFKIT_REQUIRE_PEERS=1, as CI sets it, so that a green CI
// run never hides an integration test that did not run.
package peertest

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// RequireEnv is the environment variable that turns a missing peer into a test
// failure instead of a skip.
const RequireEnv = "NETPERFKIT_REQUIRE_PEERS"

// Required reports whether missing peers must fail tests.
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0" && v != "false"
}

// Missing skips the test with the reason, or fails it when peers are required.
// hint says how to get the peer (for example "apt-get install iperf3").
func Missing(tb testing.TB, reason, hint string) {
	tb.Helper()
	msg := reason
	if hint != "" {
		msg += " (" + hint + ")"
	}
	if Required() {
		tb.Fatalf("required peer missing: %s; %s=1 is set", msg, RequireEnv)
		return
	}
	tb.Skipf("skipping: %s; set %s=1 to make this a failure", msg, RequireEnv)
}

// Binary returns the absolute path of the first of names found on PATH. When
// none is found it skips or fails the test through Missing. hint says how to
// install it, for example "apt-get install sockperf".
func Binary(tb testing.TB, hint string, names ...string) string {
	tb.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Missing(tb, "none of "+joinNames(names)+" is on PATH", hint)
	return ""
}

// Root skips or fails the test unless it runs as root on linux, which network
// namespaces and veth pairs need.
func Root(tb testing.TB) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		Missing(tb, "needs linux, running on "+runtime.GOOS, "")
		return
	}
	if os.Geteuid() != 0 {
		Missing(tb, "needs root for network namespaces", "run as root, e.g. sudo -E go test")
	}
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago, for a
// peer process that must be told its port up front. Another process may take
// the port before the peer binds it, so a caller that cannot tolerate that
// retries with a fresh port. It fails tb if no port can be had.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("peertest: no free port: %v", err)
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
