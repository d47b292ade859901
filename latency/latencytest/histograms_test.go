package latencytest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/netperfkit/netperfkit/internal/benchhist"
	"github.com/netperfkit/netperfkit/latency/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeHistogramLogsOfBenchmarkProcesses runs BenchmarkLoopbackTCP in two
// processes of this test binary with NETPERFKIT_BENCH_HISTOGRAMS set, and merges what
// they wrote: the merged count is the sum of theirs.
func TestMergeHistogramLogsOfBenchmarkProcesses(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkLoopbackTCP$", "-test.benchtime=200x", "-test.count=1")
		cmd.Env = append(os.Environ(), benchhist.Env+"="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.hlog"))
	require.NoError(t, err)
	require.Len(t, files, 2, "one histogram log per process")
	var sum int64
	for _, f := range files {
		h, _, err := shard.MergeHistogramLogs(f)
		require.NoError(t, err)
		assert.Equal(t, int64(200), h.TotalCount(), "the measured run's round trips, not the b.N=1 probe's")
		sum += h.TotalCount()
	}
	h, dropped, err := shard.MergeHistogramLogs(files...)
	require.NoError(t, err)
	assert.Zero(t, dropped)
	assert.Equal(t, sum, h.TotalCount())
}
