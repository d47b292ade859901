package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/latency/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shardLab is a bridge in the test's namespace (198.19.34.1/24) and one
// network namespace per shard on it, each with its own address: N hosts'
// generators on one machine.
type shardLab struct {
	gw    string
	ns    []string
	bin   string
	extra []string // more flags for every shard
}

func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
}

// newShardLab builds the bridge and n namespaces ("np34" names, a random
// suffix so that runs do not collide) and the cachebench binary.
func newShardLab(t *testing.T, n int) *shardLab {
	t.Helper()
	peertest.Root(t)
	peertest.Binary(t, "install iproute2", "ip")
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	br := "np34b" + suffix
	lab := &shardLab{gw: "198.19.34.1"}
	sh(t, "ip", "link", "add", br, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", br).Run() })
	sh(t, "ip", "addr", "add", lab.gw+"/24", "dev", br)
	sh(t, "ip", "link", "set", br, "up")
	for i := range n {
		ns := fmt.Sprintf("np34s%s%d", suffix, i)
		host, peer := fmt.Sprintf("np34v%s%d", suffix, i), fmt.Sprintf("np34p%s%d", suffix, i)
		sh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		sh(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer)
		sh(t, "ip", "link", "set", peer, "netns", ns)
		sh(t, "ip", "link", "set", host, "master", br, "up")
		sh(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("198.19.34.%d/24", 10+i), "dev", peer)
		sh(t, "ip", "-n", ns, "link", "set", peer, "up")
		sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
		lab.ns = append(lab.ns, ns)
	}
	lab.bin = buildCachebench(t)
	return lab
}

func buildCachebench(t *testing.T) string {
	t.Helper()
	goBin := peertest.Binary(t, "install Go", "go")
	bin := filepath.Join(t.TempDir(), "cachebench")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// shardRun is one shard process.
type shardRun struct {
	cmd  *exec.Cmd
	out  string
	errs strings.Builder
}

// start starts shard i of n in namespace ns (none when empty) against addr.
func (l *shardLab) start(t *testing.T, ns string, i, n int, addr string, at time.Time, extra ...string) *shardRun {
	t.Helper()
	r := &shardRun{out: filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", i))}
	args := append([]string{"-addr", addr, "-engine", "resp", "-mode", "pool", "-workers", "2", "-d", "2s",
		"-interval", "250ms", "-shard", fmt.Sprintf("%d/%d", i, n), "-start-at", at.UTC().Format(time.RFC3339Nano), "-out", r.out}, l.extra...)
	args = append(args, extra...)
	name := l.bin
	if ns != "" {
		args = append([]string{"netns", "exec", ns, l.bin}, args...)
		name = "ip"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	r.cmd = exec.CommandContext(ctx, name, args...)
	r.cmd.Stderr = &r.errs
	require.NoError(t, r.cmd.Start())
	return r
}

// startAll starts shard i of len(starts) in namespace i at starts[i].
func (l *shardLab) startAll(t *testing.T, addr string, starts []time.Time) []*shardRun {
	t.Helper()
	var rs []*shardRun
	for i, at := range starts {
		rs = append(rs, l.start(t, l.ns[i], i, len(starts), addr, at))
	}
	return rs
}

// together returns n copies of a start time far enough ahead for every
// process to be up, on a whole second.
func together(n int) []time.Time {
	at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
	s := make([]time.Time, n)
	for i := range s {
		s[i] = at
	}
	return s
}

func waitOK(t *testing.T, rs []*shardRun) []string {
	t.Helper()
	var files []string
	for i, r := range rs {
		require.NoError(t, r.cmd.Wait(), "shard %d: %s", i, r.errs.String())
		files = append(files, r.out)
	}
	return files
}

// assertExactMerge checks a merge against the shards' own files: the
// merged count over the common window is the sum of every shard's counts in
// that window, and the window is inside every shard's measurement.
func assertExactMerge(t *testing.T, files []string) *shard.Merged {
	t.Helper()
	m, err := shard.MergeFiles(files, nil)
	require.NoError(t, err)
	require.Positive(t, m.Intervals)
	var sum int64
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		r, err := shard.Decode(fh)
		fh.Close()
		require.NoError(t, err)
		// A shard that woke within the tolerance after the window's grid
		// line (1 % of the 250 ms interval) has its first interval counted.
		assert.False(t, m.WindowStart.Before(r.Start.Add(-2500*time.Microsecond)), "window starts before shard %s did", r.Shard)
		assert.False(t, m.WindowEnd.After(r.End), "window ends after shard %s did", r.Shard)
		var own int64
		for _, iv := range r.Intervals {
			if !iv.Start.Before(m.WindowStart) && !iv.End.After(m.WindowEnd) {
				own += iv.Count
			}
		}
		assert.Positive(t, own, "shard %s ran nothing in the window", r.Shard)
		sum += own
	}
	assert.Equal(t, sum, m.Count)
	assert.Equal(t, m.Count, m.Histogram.TotalCount())
	return m
}

// mergeCLI runs `cachebench merge` and returns its exit status and output.
func mergeCLI(t *testing.T, bin string, files ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"merge"}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		require.IsType(t, &exec.ExitError{}, err, "%s", out)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// publicRedis starts a server that the namespaces reach on the bridge.
func publicRedis(t *testing.T, gw string, cluster bool) *cachetest.Server {
	t.Helper()
	extra := []string{"--bind", "127.0.0.1 " + gw, "--protected-mode", "no"}
	if cluster {
		extra = append(extra, "--cluster-announce-ip", gw)
	}
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: cluster, ExtraArgs: extra})
	return s
}

func gwAddr(gw, addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return gw + ":" + port
}

func TestShardsAgainstOneRedis(t *testing.T) {
	lab := newShardLab(t, 4)
	srv := publicRedis(t, lab.gw, false)
	files := waitOK(t, lab.startAll(t, gwAddr(lab.gw, srv.Addr), together(4)))
	m := assertExactMerge(t, files)
	assert.Empty(t, m.Missing)
	require.Len(t, m.Rows, 4)
	code, out := mergeCLI(t, lab.bin, files...)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "4 shards, common window")
	assert.Contains(t, out, fmt.Sprintf("merged: %d operations", m.Count))
	t.Log(out)
}

func TestShardsAgainstCachetestCluster(t *testing.T) {
	lab := newShardLab(t, 4)
	srv := publicRedis(t, lab.gw, true)
	lab.extra = []string{"-cluster"}
	files := waitOK(t, lab.startAll(t, gwAddr(lab.gw, srv.Addr), together(4)))
	m := assertExactMerge(t, files)
	for _, r := range m.Rows {
		assert.Zero(t, r.Errors, "shard %d", r.Shard)
	}
}

func TestShardsStartedApartMergeTheOverlap(t *testing.T) {
	lab := newShardLab(t, 2)
	srv := publicRedis(t, lab.gw, false)
	at := together(2)
	at[1] = at[0].Add(time.Second)
	files := waitOK(t, lab.startAll(t, gwAddr(lab.gw, srv.Addr), at))
	m := assertExactMerge(t, files)
	// Shard 1 started a second later: the window begins after its start
	// and ends by shard 0's end, 1 s of the 2 s each ran.
	assert.False(t, m.WindowStart.Before(at[1]))
	assert.LessOrEqual(t, m.Window, time.Second)
	assert.GreaterOrEqual(t, m.StartSkew, 900*time.Millisecond)
}

func TestShardKilledIsNamed(t *testing.T) {
	lab := newShardLab(t, 4)
	srv := publicRedis(t, lab.gw, false)
	at := together(4)
	rs := lab.startAll(t, gwAddr(lab.gw, srv.Addr), at)
	time.Sleep(time.Until(at[0].Add(500 * time.Millisecond)))
	require.NoError(t, rs[2].cmd.Process.Signal(syscall.SIGKILL))
	var files []string
	for i, r := range rs {
		err := r.cmd.Wait()
		if i == 2 {
			assert.Error(t, err)
			assert.NoFileExists(t, r.out)
		} else {
			require.NoError(t, err, "shard %d: %s", i, r.errs.String())
		}
		files = append(files, r.out)
	}
	var present []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		}
	}
	m, err := shard.MergeFiles(present, nil)
	require.ErrorIs(t, err, shard.ErrIncomplete)
	assert.Equal(t, []int{2}, m.Missing)
	assert.Len(t, m.Rows, 3)
	code, out := mergeCLI(t, lab.bin, present...)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "MISSING shard 2")
}

func TestShardUnderCPUQuotaIsSaturated(t *testing.T) {
	peertest.Root(t)
	dir := "/sys/fs/cgroup/cpu/np34q" + strconv.Itoa(os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err != nil {
		peertest.Missing(t, "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu", "")
	}
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() { _ = os.Remove(dir) })
	require.NoError(t, os.WriteFile(dir+"/cpu.cfs_period_us", []byte("100000"), 0o644))
	require.NoError(t, os.WriteFile(dir+"/cpu.cfs_quota_us", []byte("5000"), 0o644)) // 0.05 of a core
	srv := cachetest.NewServer(t, nil)
	lab := &shardLab{bin: buildCachebench(t)}
	at := together(1)
	r := lab.start(t, "", 0, 1, srv.Addr, at[0])
	// The shard waits for -start-at: moving it now puts its whole
	// measurement under the quota.
	require.NoError(t, os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(r.cmd.Process.Pid)), 0o644))
	t.Cleanup(func() {
		// Move anything left back so that the group can be removed.
		_ = os.WriteFile("/sys/fs/cgroup/cpu/cgroup.procs", []byte(strconv.Itoa(r.cmd.Process.Pid)), 0o644)
	})
	require.NoError(t, r.cmd.Wait(), r.errs.String())
	m, err := shard.MergeFiles([]string{r.out}, nil)
	require.NoError(t, err)
	require.Len(t, m.Rows, 1)
	row := m.Rows[0]
	require.NotNil(t, row.CPU)
	assert.Equal(t, "cgroup v1 cpu.cfs_quota_us", row.CPU.LimitSource)
	assert.InDelta(t, 0.05, row.CPU.LimitCores, 1e-9)
	assert.True(t, row.Saturated, row.Reason)
	code, out := mergeCLI(t, lab.bin, r.out)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "SATURATED shard 0")
}

func TestShardStartAtPastIsRefused(t *testing.T) {
	bin := buildCachebench(t)
	cmd := exec.Command(bin, "-addr", "127.0.0.1:1", "-engine", "resp", "-shard", "0/2", "-start-at", "2020-01-01T00:00:00Z", "-out", filepath.Join(t.TempDir(), "x.json"))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Equal(t, exitPastStart, cmd.ProcessState.ExitCode())
	assert.Contains(t, string(out), "start time already past: 2020-01-01T00:00:00Z was")
}
