// Package peertest decides what an integration test does when the real peer it
// needs (a binary such as iperf3, sockperf or redis-server, or root for network
// namespaces) is missing: it skips with a clear message on a developer's laptop,
// and fails when NETPERFKIT_REQUIRE_PEERS=1, as CI sets it, so that a green CI
// run never hides an integration test that did not run.
package peertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/internal/portrange"
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

// CacheInstallHint says how to get a cache server binary (valkey-server or
// redis-server, and their CLIs) on Debian and Ubuntu.
const CacheInstallHint = "apt-get install redis-server redis-tools (or install valkey-server and valkey-cli)"

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

// QuietPorts returns the first of n consecutive TCP ports below the
// ephemeral range (net.ipv4.ip_local_port_range) that were free on
// 127.0.0.1, and on ::1 where the host has it, a moment ago: for a client
// that must bind its own ports (iperf3's --cport). A port inside the range
// may be taken by any connect(2) on the machine between the check and the
// bind, as another test's connect took one under load in CI; below it only
// an explicit bind takes one. It fails tb if no such run of ports is found.
func QuietPorts(tb testing.TB, n int) int {
	tb.Helper()
	low, v6 := ephemeralLow(), hasIPv6Loopback()
	for range 500 {
		p := 1024 + rand.IntN(low-1024-n)
		if portsFree(p, n, v6) {
			return p
		}
	}
	tb.Fatalf("peertest: no %d consecutive free ports below %d", n, low)
	return 0
}

// ephemeralLow is the ephemeral range's first port (32768, linux's
// default, where it cannot be read).
func ephemeralLow() int {
	if lo, _, err := portrange.Read(); err == nil && lo > 2048 {
		return lo
	}
	return 32768
}

// portsFree reports whether ports p to p+n-1 can each be listened on, on
// 127.0.0.1 and, with v6 (the host has it), ::1.
func portsFree(p, n int, v6 bool) bool {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for i := range n {
		for _, host := range []string{"127.0.0.1", "::1"} {
			if host == "::1" && !v6 {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+i)))
			if err != nil {
				return false
			}
			held = append(held, ln)
		}
	}
	return true
}

// hasIPv6Loopback reports whether ::1 can be listened on at all.
func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
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

// NewIPerf3Env names an iperf3 build newer than the Debian one (3.21+, built by
// ../shared/peers/build.sh), for tests and benchmarks that interoperate with and
// compare against the current release.
const NewIPerf3Env = "NETPERFKIT_IPERF3"

// NewIPerf3 returns the path of the current iperf3 release: $NETPERFKIT_IPERF3,
// or the default output of ../shared/peers/build.sh. Each of features (such
// as "authentication") must appear in its `iperf3 -v` output. When there is
// no such build it skips or fails the test through Missing.
func NewIPerf3(tb testing.TB, features ...string) string {
	tb.Helper()
	const hint = "../shared/peers/build.sh iperf3"
	p := builtPeer(tb, NewIPerf3Env, "iperf-3.21/bin/iperf3", "iperf3 3.21+", hint)
	if p == "" {
		return ""
	}
	out, err := exec.Command(p, "-v").Output()
	if err != nil {
		Missing(tb, fmt.Sprintf("%s -v: %v", p, err), hint)
		return ""
	}
	for _, f := range features {
		if !strings.Contains(string(out), f) {
			Missing(tb, fmt.Sprintf("%s was built without %s", p, f), hint)
			return ""
		}
	}
	return p
}

// ValkeyEnv names a valkey-server binary (8.0+, built by ../shared/peers/build.sh).
const ValkeyEnv = "NETPERFKIT_VALKEY_SERVER"

// Valkey returns the path of a valkey-server: $NETPERFKIT_VALKEY_SERVER, the
// default output of ../shared/peers/build.sh, or valkey-server on PATH. When
// none exists it skips or fails the test through Missing.
func Valkey(tb testing.TB) string {
	tb.Helper()
	if os.Getenv(ValkeyEnv) == "" {
		if p, err := exec.LookPath("valkey-server"); err == nil {
			return p
		}
	}
	return builtPeer(tb, ValkeyEnv, "valkey-8.0.1/bin/valkey-server", "valkey-server 8", "../shared/peers/build.sh valkey")
}

func builtPeer(tb testing.TB, env, rel, what, hint string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		Missing(tb, env+"="+p+" does not exist", hint)
		return ""
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "netperfkit-peers", rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(tb, what+" not found (set "+env+")", hint)
	return ""
}
