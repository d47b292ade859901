//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/require"
)

var agentBenchTime = flag.Duration("agent-bench-time", 30*time.Second,
	"how long BenchmarkAgentTenPeersCPU measures the agent")

// procCPU returns the user plus system CPU time of a process so far, from
// /proc/PID/stat (in USER_HZ ticks, 10 ms on linux).
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(tb, err)
	// The command name may hold spaces: fields count from after its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(tb, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(tb, err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procRSS returns a process's resident set size from /proc/PID/status.
func procRSS(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(tb, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// BenchmarkAgentTenPeersCPU runs the built agent probing 10 peers at the
// default RTT schedule (every 10 s, 5 messages each) and reports its CPU use
// in cpu-ns/s: CPU nanoseconds per wall-clock second, so 1e7 is 1% of a
// core. The peers are 127.0.0.1 to 127.0.0.10, all answered by a second
// agent process whose cost is not counted. Startup is left out: the window
// starts 2 s after the agent is ready. Run it with -benchtime 1x;
// -agent-bench-time sets the window (30 s).
func BenchmarkAgentTenPeersCPU(b *testing.B) {
	bin := buildAgent(b)
	sp, mp := peertest.FreePort(b), peertest.FreePort(b)
	peerCmd := exec.Command(bin, "-metrics", "127.0.0.1:"+strconv.Itoa(mp), "-iperf3-port", "0",
		"-sockperf-port", strconv.Itoa(sp), "-listen", "0.0.0.0", "-iface", "lo")
	require.NoError(b, peerCmd.Start())
	b.Cleanup(func() { _ = peerCmd.Process.Kill(); _ = peerCmd.Wait() })

	var peers []string
	for i := 1; i <= 10; i++ {
		peers = append(peers, fmt.Sprintf("127.0.0.%d::%d", i, sp))
	}
	ap := peertest.FreePort(b)
	var log peertest.Buffer
	agent := exec.Command(bin, "-metrics", "127.0.0.1:"+strconv.Itoa(ap), "-iperf3-port", "0", "-sockperf-port", "0",
		"-peers", strings.Join(peers, ","), "-log-format", "json")
	agent.Stderr = &log
	require.NoError(b, agent.Start())
	b.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	require.Eventually(b, func() bool { return readyAddr(log.String()) != "" }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(2 * time.Second)

	for b.Loop() {
		c0, t0 := procCPU(b, agent.Process.Pid), time.Now()
		time.Sleep(*agentBenchTime)
		c1, t1 := procCPU(b, agent.Process.Pid), time.Now()
		b.ReportMetric(float64(c1-c0)/t1.Sub(t0).Seconds(), "cpu-ns/s")
		b.ReportMetric(float64(procRSS(b, agent.Process.Pid)), "rss-bytes")
	}
	b.ReportMetric(0, "ns/op")
	require.NoError(b, agent.Process.Signal(syscall.SIGTERM))
	require.NoError(b, agent.Wait())
	require.NotContains(b, log.String(), `"level":"ERROR"`)
}
