package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

func TestCachebenchJSON(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "s3cret-pw"})
	t.Setenv("NETPERFKIT_CACHE_PASSWORD", "s3cret-pw")
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-tls", "-cacert", s.CAFile, "-user", "bench",
		"-engine", "both", "-mode", "both", "-workers", "2", "-d", "200ms", "-runs", "2", "-ratio", "3:1", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Results     []map[string]any `json:"results"`
		Comparisons []map[string]any `json:"comparisons"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o))
	require.Len(t, o.Results, 4)
	seen := map[string]bool{}
	for _, r := range o.Results {
		for _, k := range []string{"engine", "mode", "p50_us", "p99_us", "ops_per_sec", "attempts", "errors"} {
			require.Contains(t, r, k)
		}
		seen[r["engine"].(string)+"/"+r["mode"].(string)] = true
		ops := r["ops_per_sec"].(map[string]any)
		assert.Positive(t, ops["median"])
		assert.LessOrEqual(t, ops["min"], ops["median"])
		assert.Equal(t, 2.0, ops["n"])
		assert.Equal(t, 0.0, r["errors"])
	}
	assert.Equal(t, map[string]bool{"glide/pool": true, "resp/pool": true, "glide/connect": true, "resp/connect": true}, seen)
	assert.Len(t, o.Comparisons, 4)
	assert.NotContains(t, out.String()+errb.String(), "s3cret-pw")
}

func TestCachebenchErrors(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{User: "bench", Password: "s3cret-pw"})
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-user", "bench", "-password", "bad-pw", "-engine", "resp", "-d", "100ms", "-runs", "1"}, &out, &errb)
	assert.Equal(t, 1, rc)
	assert.Contains(t, errb.String(), "auth_wrongpass")
	assert.NotContains(t, errb.String(), "bad-pw")

	errb.Reset()
	assert.Equal(t, 2, run([]string{"-engine", "redis"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"-ratio", "x"}, &out, &errb))
}

// Built without cgo, -engine glide warns and runs resp: the binary is built
// for real with CGO_ENABLED=0, as users on windows/arm64 get it.
func TestCachebenchWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tool without cgo")
	}
	s := cachetest.NewServer(t, nil)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the cgo-free binary")
	}
	bin := filepath.Join(t.TempDir(), "cachebench")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "-addr", s.Addr, "-engine", "both", "-mode", "pool", "-workers", "1", "-d", "100ms", "-runs", "1", "-json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Contains(t, stderr.String(), "glide engine not built in (needs cgo)")
	var o struct {
		Results []struct {
			Engine string `json:"engine"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &o))
	require.Len(t, o.Results, 1, "glide and resp collapse to one resp run")
	assert.Equal(t, "resp", o.Results[0].Engine)
}

func TestCachebenchRate(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-rate", "500", "-arrival", "poisson",
		"-workers", "0", "-d", "400ms", "-runs", "1", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Rate    float64          `json:"rate"`
		Arrival string           `json:"arrival"`
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o))
	assert.Equal(t, 500.0, o.Rate)
	assert.Equal(t, "poisson", o.Arrival)
	require.Len(t, o.Results, 2)
	for _, r := range o.Results {
		for _, k := range []string{"target_rate", "achieved_rate", "service_p99_us"} {
			require.Contains(t, r, k)
		}
		assert.Equal(t, 500.0, r["target_rate"])
		run := r["runs_detail"].([]any)[0].(map[string]any)
		sched := run["schedule"].(map[string]any)
		assert.Equal(t, sched["due"], sched["started"].(float64)+sched["unstarted"].(float64))
		assert.Contains(t, sched, "service")
		assert.Contains(t, sched, "response")
		// The client's own share, beside them; the RESP engine reads its
		// replies with kernel receive timestamps on linux.
		require.Contains(t, sched, "client_lateness")
		require.Contains(t, sched, "receive_wake")
		assert.Equal(t, sched["response"].(map[string]any)["observations"], sched["client_lateness"].(map[string]any)["observations"])
		if runtime.GOOS == "linux" && r["mode"] == "pool" {
			assert.Positive(t, sched["receive_wake"].(map[string]any)["observations"], "kernel arrival times")
		}
	}

	out.Reset()
	rc = run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "pool", "-rate", "300", "-d", "300ms", "-runs", "1"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	assert.Contains(t, out.String(), "open loop at 300 ops/s (uniform)")
	assert.Contains(t, out.String(), "achieved/s")
	assert.Contains(t, out.String(), "receive wake p99 us")

	assert.Equal(t, 2, run([]string{"-rate", "-1"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"-arrival", "bursty"}, &out, &errb))
}

// -slo searches per mode; two workers cannot offer the rates the doubling
// reaches, so every search ends with a rate that broke.
func TestCachebenchSLO(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-workers", "2", "-slo", "p99=1s",
		"-start", "1000", "-step", "500ms", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Searches []struct {
			Engine  string  `json:"engine"`
			Mode    string  `json:"mode"`
			SLO     string  `json:"slo"`
			Rate    float64 `json:"rate"`
			BrokeAt float64 `json:"broke_at"`
			Steps   []struct {
				Phase        string  `json:"phase"`
				Rate         float64 `json:"rate"`
				PercentileUs float64 `json:"percentile_us"`
				Met          bool    `json:"met"`
			} `json:"steps"`
		} `json:"searches"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o), out.String())
	require.Len(t, o.Searches, 2)
	for _, sr := range o.Searches {
		assert.Equal(t, "p99=1s", sr.SLO)
		require.NotEmpty(t, sr.Steps)
		assert.Equal(t, 1000.0, sr.Steps[0].Rate)
		assert.Positive(t, sr.BrokeAt, "two workers cannot hold every rate")
		if sr.Rate > 0 {
			assert.Less(t, sr.Rate, sr.BrokeAt)
		}
	}
	assert.Contains(t, errb.String(), "resp pool grow: 1000 ops/s")

	out.Reset()
	assert.Equal(t, 2, run([]string{"-slo", "p99"}, &out, &errb))
}

// cancelOn is a stderr that cancels when a line containing marker is
// written, as Ctrl-C would once the tool is under way.
type cancelOn struct {
	mu     sync.Mutex
	b      bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(string(p), c.marker) {
		c.cancel()
	}
	return c.b.Write(p)
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// Stopped (Ctrl-C, SIGTERM) after its first run, the tool prints the runs
// so far marked as partial and exits 130, in JSON and as tables.
func TestCachebenchInterruptedPrintsPartial(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	for _, asJSON := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errb := &cancelOn{marker: "resp pool:", cancel: cancel}
		var out bytes.Buffer
		args := []string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-workers", "1", "-d", "100ms", "-runs", "1000"}
		if asJSON {
			args = append(args, "-json")
		}
		rc := runCtx(ctx, args, &out, errb)
		require.Equal(t, exitInterrupted, rc, errb.String())
		assert.Contains(t, errb.String(), "interrupted")
		if !asJSON {
			assert.Contains(t, out.String(), "INTERRUPTED: partial results")
			assert.Regexp(t, `resp\s+pool`, out.String())
			continue
		}
		var o struct {
			Interrupted bool `json:"interrupted"`
			Results     []struct {
				Mode     string           `json:"mode"`
				Attempts int64            `json:"attempts"`
				Runs     []map[string]any `json:"runs_detail"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &o), out.String())
		assert.True(t, o.Interrupted)
		require.Len(t, o.Results, 1, "the pool runs so far; connect mode never started")
		assert.Equal(t, "pool", o.Results[0].Mode)
		assert.GreaterOrEqual(t, len(o.Results[0].Runs), 1)
		assert.Positive(t, o.Results[0].Attempts)
	}
}

// A signal sent to the process after its first run stops it with the runs
// so far, marked as partial, and exit status 128 + the signal's number, as
// a shell reports it: 130 for SIGINT (Ctrl-C), 143 for SIGTERM.
func TestCachebenchSignalExitStatus(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM to send on windows")
	}
	s := cachetest.NewServer(t, nil)
	goBin, err := exec.LookPath("go")
	if err != nil {
		peertest.Missing(t, "the go command is not on PATH, needed to build cachebench", "")
	}
	bin := filepath.Join(t.TempDir(), "cachebench")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var stdout, stderr peertest.Buffer
			cmd := exec.Command(bin, "-addr", s.Addr, "-engine", "resp", "-mode", "pool", "-workers", "1",
				"-d", "100ms", "-runs", "1000", "-json")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "resp pool:") },
				30*time.Second, 10*time.Millisecond, "no run finished: %s", stderr.String())
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10 s after %v", sig)
			}
			assert.Equal(t, 128+int(sig), cmd.ProcessState.ExitCode(), stderr.String())
			var o struct {
				Interrupted bool `json:"interrupted"`
				Results     []struct {
					Runs []map[string]any `json:"runs_detail"`
				} `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout.String()), &o), stdout.String())
			assert.True(t, o.Interrupted)
			require.Len(t, o.Results, 1)
			assert.NotEmpty(t, o.Results[0].Runs, "the runs before the signal")
		})
	}
}

func TestStoppedStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, exitInterrupted, stoppedStatus(ctx), "cancelled without a signal: as Ctrl-C")
	cctx, ccancel := context.WithCancelCause(context.Background())
	ccancel(stopSignal{syscall.SIGTERM})
	assert.Equal(t, 143, stoppedStatus(cctx))
}

// An SLO search stopped after its first step prints the steps so far.
func TestCachebenchSLOInterruptedPrintsPartial(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errb := &cancelOn{marker: "grow:", cancel: cancel}
	var out bytes.Buffer
	rc := runCtx(ctx, []string{"-addr", s.Addr, "-engine", "resp", "-mode", "pool", "-slo", "p99=1s",
		"-start", "2000", "-step", "100ms", "-json"}, &out, errb)
	require.Equal(t, exitInterrupted, rc, errb.String())
	var o struct {
		Interrupted bool `json:"interrupted"`
		Searches    []struct {
			Steps []map[string]any `json:"steps"`
		} `json:"searches"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o), out.String())
	assert.True(t, o.Interrupted)
	require.Len(t, o.Searches, 1)
	assert.NotEmpty(t, o.Searches[0].Steps)
}

// Error kinds print as their names, not as errors ("cache: timeout").
func TestPrintErrorsKindNames(t *testing.T) {
	var b bytes.Buffer
	printErrors(&b, &output{Results: []*row{{Result: &median.Result{Engine: "resp", Mode: cache.Pooled, Errors: 4,
		ErrorsByKind: map[cache.ErrorKind]int64{cache.ErrTimeout: 3, cache.ErrConnectRefused: 1}}}}})
	assert.Equal(t, "cachebench: resp pool errors: [connect_refused=1 timeout=3]\n", b.String())
}

func TestClientShareNote(t *testing.T) {
	assert.Empty(t, clientShareNote("resp pool", 400*time.Microsecond, 10*time.Microsecond, 20*time.Microsecond), "a small share")
	assert.Empty(t, clientShareNote("resp pool", 0, 0, 0), "nothing measured")
	n := clientShareNote("resp pool", 200*time.Microsecond, 30*time.Microsecond, 40*time.Microsecond)
	assert.Contains(t, n, "resp pool")
	assert.Contains(t, n, "p99 200 us")
	assert.Contains(t, n, "receive wake-up p99 40 us")
}

// A closed-loop connect-per-op run gets one P per 4 workers, the pooled
// run Go's default; -procs N sets every run's, -1 and GOMAXPROCS in the
// environment leave Go's; the process's own is restored after each run.
func TestCachebenchProcs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: every rule gives GOMAXPROCS 1")
	}
	s := cachetest.NewServer(t, nil)
	before := runtime.GOMAXPROCS(0)
	procs := func(args ...string) map[string]float64 {
		t.Helper()
		var out, errb bytes.Buffer
		rc := run(append([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-workers", "4", "-d", "100ms", "-runs", "1", "-json"}, args...), &out, &errb)
		require.Equal(t, 0, rc, errb.String())
		var o struct {
			Results []map[string]any `json:"results"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &o))
		got := map[string]float64{}
		for _, r := range o.Results {
			got[r["mode"].(string)] = r["gomaxprocs"].(float64)
		}
		assert.Equal(t, before, runtime.GOMAXPROCS(0), "restored after the runs")
		return got
	}
	assert.Equal(t, map[string]float64{"pool": float64(before), "connect": 1}, procs())
	assert.Equal(t, map[string]float64{"pool": 1, "connect": 1}, procs("-procs", "1"))
	assert.Equal(t, map[string]float64{"pool": float64(before), "connect": float64(before)}, procs("-procs", "-1"))
	t.Setenv("GOMAXPROCS", "2")
	assert.Equal(t, map[string]float64{"pool": float64(before), "connect": float64(before)}, procs(), "the environment's choice stands")

	var out, errb bytes.Buffer
	assert.NotEqual(t, 0, run([]string{"-addr", s.Addr, "-procs", "-2"}, &out, &errb))
	assert.Contains(t, errb.String(), "-procs -2")
}

// -n ends each run after N operations, as redis-benchmark's -n does, with -d
// only bounding it; it refuses a negative count and the runs that a
// duration sizes (-slo, -shard).
func TestCachebenchOps(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-workers", "3", "-n", "250", "-d", "1m", "-runs", "2", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o))
	require.Len(t, o.Results, 2)
	for _, r := range o.Results {
		assert.EqualValues(t, 2*250, r["attempts"], "%s: two runs of 250", r["mode"])
	}
	assert.Equal(t, 2, strings.Count(errb.String(), "resp connect:"), errb.String())

	for _, args := range [][]string{{"-n", "-1"}, {"-n", "10", "-slo", "p99=1ms"}, {"-n", "10", "-shard", "0/2"}} {
		errb.Reset()
		assert.Equal(t, 2, run(append([]string{"-addr", s.Addr}, args...), &out, &errb), "%v", args)
		assert.Contains(t, errb.String(), "-n", "%v", args)
	}
}
