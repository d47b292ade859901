package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency/latencytest"
	"github.com/netperfkit/netperfkit/latency/slo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONKeys(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "rtt.hlog")
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-n", "200", "-m", "64", "-json", "-hist", hist}, &out, &errOut), errOut.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &m), out.String())
	for _, k := range []string{"observations", "dropped", "out_of_order", "avg_us", "stddev_us", "min_us", "max_us",
		"p25_us", "p50_us", "p75_us", "p90_us", "p99_us", "p999_us", "p9999_us", "p99999_us", "ci_low_us", "ci_high_us"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, 200.0, m["observations"])
	assert.Equal(t, 64.0, m["message_size_bytes"])
	if runtime.GOOS == "linux" {
		// The default receive path reads in the kernel with arrival times.
		require.Contains(t, m, "receive_wake")
		assert.Equal(t, 200.0, m["receive_wake"].(map[string]any)["observations"])
		// And the kernel-to-kernel view beside the application's.
		require.Contains(t, m, "kernel_rtt")
		assert.Equal(t, 200.0, m["kernel_rtt"].(map[string]any)["observations"])
	}

	f, err := os.Open(hist)
	require.NoError(t, err)
	defer f.Close()
	lr := hdrhistogram.NewHistogramLogReader(f)
	h, err := lr.NextIntervalHistogram()
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Equal(t, int64(200), h.TotalCount())
	h, err = lr.NextIntervalHistogram()
	require.NoError(t, err)
	assert.Nil(t, h, "one interval")
}

func TestTextAgainstServerTCPUnderLoad(t *testing.T) {
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "tcp"})
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-addr", srv.Addr, "-tcp", "-t", "700ms", "-mps", "1000"}, &out, &errOut), errOut.String())
	s := out.String()
	assert.Contains(t, s, "under-load (1000 msg/s, reply every 100) over tcp to "+srv.Addr)
	assert.Contains(t, s, "sockperf: Summary: Round trip is")
	assert.Contains(t, s, "raw send-to-reply round-trip times")
	assert.Contains(t, s, "---> percentile 99.999 =")
	assert.Regexp(t, `sockperf: \d+ messages sent late`, s)
	assert.Regexp(t, `sockperf: client's own share: send lateness p99 [0-9.]+ usec`, s)
	assert.Contains(t, s, "sockperf: no kernel stamps: under-load run", "no kernel view, and the text says why")
}

func TestTextInProcessServer(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-n", "50"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "(in-process server)")
}

func TestTextLoopbackAddrIsNotInProcess(t *testing.T) {
	// A user's server on 127.0.0.1 (a local sockperf, say) is not ours.
	srv := latencytest.NewServer(t, &latencytest.Config{Network: "udp"})
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-addr", srv.Addr, "-n", "50"}, &out, &errOut), errOut.String())
	s := out.String()
	assert.Contains(t, s, "ping-pong over udp to "+srv.Addr+",")
	assert.NotContains(t, s, "in-process")
	if runtime.GOOS == "linux" {
		// The kernel view leads, the application's follows.
		k := strings.Index(s, "sockperf: kernel-to-kernel round trip")
		a := strings.Index(s, "sockperf: Summary: Round trip is")
		require.GreaterOrEqual(t, k, 0, s)
		assert.Less(t, k, a, s)
		assert.Regexp(t, `kernel-to-kernel round trip .*: p50 [0-9.]+ p99 [0-9.]+ p99.9 [0-9.]+ max [0-9.]+ usec, 50 observations`, s)
	}
}

func TestBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Error(t, run([]string{"-m", "5"}, &out, &errOut))
	assert.Error(t, run([]string{"-bogus"}, &out, &errOut))
	assert.Error(t, run([]string{"extra"}, &out, &errOut))
	assert.Error(t, run([]string{"-t", "100ms"}, &out, &errOut), "shorter than the warm-up")
}

// -slo against the in-process server: every step is printed and the search
// ends with a rate (or none) and where it broke.
func TestSLOSearch(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-slo", "p99=50ms", "-start", "500", "-step", "300ms", "-json"}, &out, &errOut), errOut.String())
	var res slo.Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Equal(t, "p99=50ms", res.SLO)
	require.NotEmpty(t, res.Steps)
	assert.Equal(t, 500.0, res.Steps[0].Rate)
	for _, st := range res.Steps {
		// Every message of a step asks for a reply: each is measured or
		// counted as dropped, however slow this machine.
		assert.Positive(t, st.Requests+st.Failed, "rate %v accounted for no message", st.Rate)
		assert.Equal(t, st.Met, st.Percentile <= 50*time.Millisecond && st.Failed == 0 && st.AchievedRate >= 0.9*st.Rate && st.Requests >= 1000,
			"rate %v: the verdict matches its numbers", st.Rate)
	}
	assert.Contains(t, errOut.String(), "pingpong: grow 500 msg/s")

	out.Reset()
	require.NoError(t, run([]string{"-slo", "p99.9=200us", "-start", "200", "-step", "200ms", "-tcp"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "SLO p99.9=200µs on 127.0.0.1:")
	assert.Contains(t, out.String(), "highest rate meeting p99.9=200µs:")
	assert.Error(t, run([]string{"-slo", "fast"}, &out, &errOut))
}
