package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
	"github.com/netperfkit/netperfkit/throughput"
)

// TestJudgeLoaded: a loaded RTT is the path's unless the generator's CPU,
// its idle connections or the probe's own share say otherwise, and then
// the note says which.
func TestJudgeLoaded(t *testing.T) {
	base := func() *LoadedRTT {
		return &LoadedRTT{Streams: 8, ProbeMPS: 1000, SenderCPUPercent: 100, HostCPUPercent: 40,
			RTT: latency.Summary{P50: 5 * time.Millisecond, P99: 9 * time.Millisecond}}
	}
	for _, c := range []struct {
		name  string
		edit  func(l *LoadedRTT)
		share time.Duration
		cpus  int
		spin  bool
		want  []string // in the note; none: the path's
	}{
		{"quiet sender, small share", func(*LoadedRTT) {}, 100 * time.Microsecond, 32, false, nil},
		// 8 streams, and the probe's sender that sleeps: 8 cores.
		{"CPU-bound sender", func(l *LoadedRTT) { l.SenderCPUPercent = 820 }, 0, 32, false, []string{"CPU-bound: 820% of 8 core(s)"}},
		// Spin's busy-waiting sender and spinning receiver: 10.
		{"spin probe takes two cores more", func(l *LoadedRTT) { l.SenderCPUPercent = 820 }, 0, 32, true, nil},
		{"all of a small machine", func(l *LoadedRTT) { l.SenderCPUPercent = 185 }, 0, 2, true, []string{"CPU-bound: 185% of 2 core(s)"}},
		{"unknown CPU", func(l *LoadedRTT) { l.SenderCPUPercent = -1 }, 0, 2, false, nil},
		{"in-process, process saturated", func(l *LoadedRTT) { l.SenderCPUPercent, l.ProcessCPUPercent = -1, 190 }, 0, 2, false,
			[]string{"the report's own process", "190% of 2 CPU(s)"}},
		{"in-process, process not saturated", func(l *LoadedRTT) { l.SenderCPUPercent, l.ProcessCPUPercent = -1, 120 }, 0, 2, false, nil},
		{"host busy", func(l *LoadedRTT) { l.HostCPUPercent = 97 }, 0, 2, false, []string{"the host's 2 CPU(s) were 97% busy"}},
		{"host just under 90%", func(l *LoadedRTT) { l.HostCPUPercent = 89 }, 0, 2, false, []string{"the host's 2 CPU(s) were 89% busy"}},
		{"host with CPU to spare", func(l *LoadedRTT) { l.HostCPUPercent = 70 }, 0, 2, false, nil},
		{"host unknown", func(l *LoadedRTT) { l.HostCPUPercent = -1 }, 0, 2, false, nil},
		{"idle connections", func(l *LoadedRTT) { l.TCPLimits = &throughput.TCPLimits{Busy: 0.6} }, 0, 32, false, []string{"idle 40% of the time"}},
		{"busy connections", func(l *LoadedRTT) { l.TCPLimits = &throughput.TCPLimits{Busy: 0.9} }, 0, 32, false, nil},
		{"large client share", func(*LoadedRTT) {}, 2250 * time.Microsecond, 32, false, []string{"probe's own share", "2250.0 us", "p99 9000.0 us"}},
		{"two reasons", func(l *LoadedRTT) { l.SenderCPUPercent = 900 }, 3 * time.Millisecond, 32, false, []string{"CPU-bound", "; the probe's own share"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := base()
			c.edit(l)
			by, note := judgeLoaded(l, c.share, c.cpus, c.spin)
			if c.want == nil {
				assert.Equal(t, "path", by)
				assert.Empty(t, note)
				return
			}
			assert.Equal(t, "generator", by)
			for _, w := range c.want {
				assert.Contains(t, note, w)
			}
		})
	}
}

// loadedSection is a two-path E1 with a loaded RTT on each: one the
// path's, one the generator's, the second from too few round trips for
// its p99.9.
func loadedSection() *PathsSection {
	idle := latency.Summary{Observations: 50000, P50: 50 * time.Microsecond, P99: 60 * time.Microsecond, P999: 80 * time.Microsecond}
	return &PathsSection{
		Result: &srdexperiment.Result{Targets: []srdexperiment.TargetResult{
			{Target: srdexperiment.Target{Name: "same"}, Streams: 8, RTT: idle},
			{Target: srdexperiment.Target{Name: "cross"}, Streams: 8, RTT: idle},
		}},
		RTTMode: "spin", RTTLoad: "on",
		Loaded: []LoadedRTT{
			{Name: "same", Streams: 8, ProbeMPS: 1000, FlowBitsPerSecond: 9.5e9, AttributedTo: "path",
				RTT:      latency.Summary{Observations: 1600, P50: 100 * time.Microsecond, P99: 300 * time.Microsecond, P999: 400 * time.Microsecond},
				RatioP50: 2, RatioP99: 5, RatioP999: 5},
			{Name: "cross", Streams: 8, ProbeMPS: 1000, FlowBitsPerSecond: 4e9, AttributedTo: "generator", GeneratorNote: "the flow's sender was CPU-bound",
				RTT:      latency.Summary{Observations: 700, P50: 75 * time.Microsecond, P99: 120 * time.Microsecond, P999: 160 * time.Microsecond},
				RatioP50: 1.5, RatioP99: 2, RatioP999: 2},
		},
	}
}

// TestWriteLoadedText: one row per path, idle and loaded side by side with
// their ratios, and a generator's row says so rather than crediting the
// path.
func TestWriteLoadedText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeLoadedText(&b, loadedSection()))
	s := b.String()
	assert.Contains(t, s, "E1 RTT: idle and under the 8-stream flow's load (probe of 1000 msg/s")
	assert.Regexp(t, `same\s+9\.50\s+50\.0\s+100\.0\s+2\.00x\s+60\.0\s+300\.0\s+5\.00x\s+80\.0\s+400\.0\s+5\.00x\s+the path's`, s)
	assert.Regexp(t, `cross\s+4\.00\s+50\.0\s+75\.0\s+1\.50x(\s+\S+){6}\s+the generator's \(see note\)`, s)
	assert.Contains(t, s, "cross: loaded RTT not the path's alone: the flow's sender was CPU-bound")
	assert.Contains(t, s, "cross: loaded RTT from 700 round trips: a p99.9 needs 1000")
	assert.NotContains(t, s, "same: loaded RTT")

	// A failed loaded run prints "-", and why.
	sec := loadedSection()
	sec.Loaded[1] = LoadedRTT{Name: "cross", Streams: 8, ProbeMPS: 1000, Error: "not measured: the idle phases failed"}
	b.Reset()
	require.NoError(t, writeLoadedText(&b, sec))
	assert.Regexp(t, `cross\s+0\.00\s+50\.0\s+-\s+-\s+60\.0\s+-\s+-\s+80\.0\s+-\s+-\s+-\n`, b.String())
	assert.Contains(t, b.String(), "cross: loaded RTT: not measured: the idle phases failed")

	// -rtt-load off: no table at all.
	sec.Loaded, sec.RTTLoad = nil, "off"
	b.Reset()
	require.NoError(t, writeLoadedText(&b, sec))
	assert.Empty(t, b.String())
}

// TestE1JSONKeepsKeys: report.json's E1 keeps every key it had and adds
// rtt_load and loaded_rtt, which read back into the same values.
func TestE1JSONKeepsKeys(t *testing.T) {
	sec := loadedSection()
	sec.SingleFlowLimits = map[string]float64{"same": 25e9}
	sec.CountersNote = "loopback targets: NIC counters not relevant"
	sec.Targets[0].Error = "x"
	b, err := json.Marshal(&Report{Paths: sec})
	require.NoError(t, err)
	var raw struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	for _, k := range []string{"interface", "started", "targets", "rtt_mode", "single_flow_limit_bits_per_second", "counters_note", "rtt_load", "loaded_rtt"} {
		assert.Contains(t, raw.Paths, k)
	}
	var targets []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw.Paths["targets"], &targets))
	for _, k := range []string{"name", "throughput_addr", "pingpong_addr", "single_flow_bits_per_second", "streams", "multi_stream_bits_per_second", "rtt", "srd", "windows", "error"} {
		assert.Contains(t, targets[0], k)
	}
	var loaded []map[string]any
	require.NoError(t, json.Unmarshal(raw.Paths["loaded_rtt"], &loaded))
	require.Len(t, loaded, 2)
	for _, k := range []string{"name", "streams", "flow_bits_per_second", "probe_mps", "rtt", "ratio_p50", "ratio_p99", "ratio_p999",
		"client_share_p99_us", "sender_cpu_percent", "host_cpu_percent", "attributed_to"} {
		assert.Contains(t, loaded[0], k)
	}
	assert.Equal(t, 100.0, loaded[0]["rtt"].(map[string]any)["p50_us"])
	assert.Equal(t, "generator", loaded[1]["attributed_to"])

	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sec.Loaded, back.Paths.Loaded)
	assert.Equal(t, "on", back.Paths.RTTLoad)

	// Off: the old document, with rtt_load saying so.
	sec.Loaded, sec.RTTLoad = nil, "off"
	b, err = json.Marshal(sec)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "loaded_rtt")
	assert.Contains(t, string(b), `"rtt_load":"off"`)
}

// TestCompareLoadedRTT: -compare relates each path's loaded RTT and its
// ratios to the idle RTT, one run a side (n=1) as E1's other figures.
func TestCompareLoadedRTT(t *testing.T) {
	oldSec, newSec := loadedSection(), loadedSection()
	newSec.Loaded[0].RTT.P99 = 150 * time.Microsecond
	newSec.Loaded[0].RatioP99 = 2.5
	c := compareReports(&Report{Paths: oldSec}, &Report{Paths: newSec}, "off", "on")
	by := map[string]MetricCompare{}
	for _, m := range c.Metrics {
		by[m.Name] = m
	}
	for _, name := range []string{"E1 same loaded RTT p50", "E1 same loaded RTT p99", "E1 same loaded RTT p99.9",
		"E1 same loaded/idle RTT p50", "E1 same loaded/idle RTT p99", "E1 same loaded/idle RTT p99.9", "E1 cross loaded RTT p99", "E1 same RTT p99"} {
		assert.Contains(t, by, name)
	}
	m := by["E1 same loaded RTT p99"]
	assert.Equal(t, 300.0, m.Old.Median)
	assert.Equal(t, 150.0, m.New.Median)
	assert.InDelta(t, 0.5, m.Ratio, 1e-9)
	assert.Equal(t, "n=1", m.Verdict)
	require.NotNil(t, m.Test, "benchmath's test, as for every metric")
	assert.Equal(t, "x", by["E1 same loaded/idle RTT p99"].Unit)
	assert.InDelta(t, 2.5/5, by["E1 same loaded/idle RTT p99"].Ratio, 1e-9)
	var b bytes.Buffer
	require.NoError(t, writeComparison(&b, c))
	assert.Regexp(t, `E1 same loaded RTT p99\s+us\s+300\s+150\s+0\.50x\s+n=1`, b.String())

	// A report without loaded RTTs (older, or -rtt-load off) has nothing
	// to relate them to.
	oldSec.Loaded = nil
	c = compareReports(&Report{Paths: oldSec}, &Report{Paths: newSec}, "off", "on")
	for _, m := range c.Metrics {
		assert.NotContains(t, m.Name, "loaded")
	}
}

// TestRTTSeries: the spectrum plot has both curves of a path measured
// under load, and today's one curve otherwise.
func TestRTTSeries(t *testing.T) {
	rec, err := latency.NewRecorder(nil)
	require.NoError(t, err)
	rec.Record(time.Millisecond)
	h := rec.Snapshot()
	sec := loadedSection()
	sec.rttHists = map[string]*hdrhistogram.Histogram{"same": h, "cross": h}
	sec.loadedHists = map[string]*hdrhistogram.Histogram{"same": h}
	var names []string
	for _, s := range rttSeries(sec) {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"same idle", "same under 8-stream load", "cross"}, names)
}

// TestReportRTTLoadOnAndOff runs E1 against the in-process servers: with
// -rtt-load on (the default) each path has a loaded RTT, its own counter
// window, a verdict and the side-by-side table; off, none of them.
func TestReportRTTLoadOnAndOff(t *testing.T) {
	for _, load := range []string{"on", "off"} {
		t.Run(load, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-skip", "matrix,cache", "-imds", "off", "-rtt-mode", "poll", "-rtt-load", load,
				"-d", "200ms", "-rtt-d", "1s", "-streams", "2", "-out", out}, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			b, err := os.ReadFile(filepath.Join(out, "report.json"))
			require.NoError(t, err)
			var rep Report
			require.NoError(t, json.Unmarshal(b, &rep))
			require.NotNil(t, rep.Paths)
			require.Len(t, rep.Paths.Targets, 1)
			assert.Equal(t, load, rep.Paths.RTTLoad)
			phases := []string{}
			for _, w := range rep.Paths.Targets[0].Windows {
				phases = append(phases, w.Phase)
			}
			md, err := os.ReadFile(filepath.Join(out, "report.md"))
			require.NoError(t, err)
			if load == "off" {
				assert.Empty(t, rep.Paths.Loaded)
				assert.Equal(t, []string{"1-flow", "n-stream", "rtt"}, phases)
				assert.NotContains(t, stdout.String(), "E1 RTT: idle")
				return
			}
			assert.Equal(t, []string{"1-flow", "n-stream", "rtt", "rtt-load"}, phases)
			require.Len(t, rep.Paths.Loaded, 1)
			l := rep.Paths.Loaded[0]
			assert.Equal(t, "loopback", l.Name)
			assert.Equal(t, 2, l.Streams)
			assert.Empty(t, l.Error)
			// How many round trips a loaded machine answers is its own
			// business; each is accounted for, and the verdict matches
			// the ratios it prints.
			assert.Positive(t, l.RTT.Observations+l.RTT.Dropped)
			assert.Contains(t, []string{"path", "generator"}, l.AttributedTo)
			assert.Equal(t, l.AttributedTo == "generator", l.GeneratorNote != "")
			if l.RTT.P50 > 0 && rep.Paths.Targets[0].RTT.P50 > 0 {
				assert.InEpsilon(t, float64(l.RTT.P50)/float64(rep.Paths.Targets[0].RTT.P50), l.RatioP50, 1e-9)
			}
			assert.Equal(t, -1.0, l.SenderCPUPercent, "the in-process server shares the process")
			assert.Contains(t, stdout.String(), "E1 RTT: idle and under the 2-stream flow's load")
			assert.Contains(t, string(md), "| path | flow (Gbit/s) | p50 idle (us) | p50 loaded (us) |")
			assert.True(t, strings.Contains(stdout.String(), "the path's") || strings.Contains(stdout.String(), "loaded RTT not the path's alone"))
		})
	}
}

// TestParseProcStat reads the aggregate cpu line; busy is all but idle and
// iowait, and the share between two readings is of all CPUs.
func TestParseProcStat(t *testing.T) {
	c, err := parseProcStat(strings.NewReader("cpu  100 5 50 800 20 3 2 1 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1 2\n"))
	require.NoError(t, err)
	assert.Equal(t, hostCPU{busy: 161, total: 981, ok: true}, c)
	c2 := hostCPU{busy: c.busy + 90, total: c.total + 100, ok: true}
	assert.InDelta(t, 90.0, busyPercent(c, c2), 1e-9)
	assert.Equal(t, -1.0, busyPercent(c, hostCPU{}), "unknown, never 0")
	assert.Equal(t, -1.0, busyPercent(c2, c), "counters that went back")
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5\n", "cpu 18446744073709551615 1 1 1\n"} {
		_, err := parseProcStat(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
	assert.True(t, readHostCPU().ok || runtime.GOOS != "linux", "linux has /proc/stat")
}

func FuzzParseProcStat(f *testing.F) {
	f.Add("cpu  127986 0 34130 29969 362 0 3926 285 0 0\ncpu0 62950 0 17610 15545 55 0 2024 144 0 0\n")
	f.Add("cpu 1 2 3 4\n")
	f.Add("cpu 1 2 3\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseProcStat(strings.NewReader(s))
		if err != nil {
			assert.False(t, c.ok)
			return
		}
		assert.True(t, c.ok)
		assert.LessOrEqual(t, c.busy, c.total)
		p := busyPercent(c, hostCPU{busy: c.busy + 1, total: c.total + 2, ok: true})
		assert.True(t, p == -1 || (p >= 0 && p <= 100), "%v", p)
	})
}

// cancelOn is a progress writer that cancels once a line names the step.
type cancelOn struct {
	mu     sync.Mutex
	step   string
	cancel context.CancelFunc
	seen   bool
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen && strings.Contains(string(p), c.step) {
		c.seen = true
		go func() {
			time.Sleep(300 * time.Millisecond) // into the run, past its start
			c.cancel()
		}()
	}
	return len(p), nil
}

// TestReportCancelUnderLoad interrupts E1 while the RTT under load runs:
// the report keeps the idle phases, the interrupted loaded run's row and
// its counter window, and says it was interrupted.
func TestReportCancelUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := t.TempDir()
	var stdout bytes.Buffer
	stderr := &cancelOn{step: "loopback rtt-load", cancel: cancel}
	code := run(ctx, []string{"-skip", "matrix,cache", "-imds", "off", "-progress", "on", "-rtt-mode", "poll",
		"-d", "200ms", "-rtt-d", "2s", "-streams", "2", "-out", out}, &stdout, stderr)
	require.True(t, stderr.seen, "the loaded phase started")
	assert.Equal(t, 130, code)
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Interrupted)
	assert.Contains(t, rep.Error, "rtt-load: context canceled")
	require.NotNil(t, rep.Paths)
	require.Len(t, rep.Paths.Targets, 1)
	ws := rep.Paths.Targets[0].Windows
	require.Len(t, ws, 4)
	assert.Equal(t, "rtt-load", ws[3].Phase)
	require.Len(t, rep.Paths.Loaded, 1)
	assert.Empty(t, rep.Paths.Loaded[0].Error, "a cancel is the report's error, not the row's")
	assert.Contains(t, stdout.String(), "E1 RTT: idle and under")
	assert.Contains(t, stdout.String(), "INTERRUPTED")
}

// TestReportLoadedSnapshotFails: a counter snapshot that fails after the
// loaded run fails the report, as one between srdexperiment's phases
// does, and keeps the loaded row it measured.
func TestReportLoadedSnapshotFails(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	o, err := parseFlags([]string{"-skip", "matrix,cache", "-imds", "off", "-iface", "eth0", "-rtt-mode", "poll",
		"-d", "200ms", "-rtt-d", "1s", "-streams", "2", "-out", out}, &stderr)
	require.NoError(t, err)
	snap := enaFixture(t, "ena-2.17-same-az-before.txt")
	// Four for srdexperiment's phases, one before the loaded run: none after.
	o.snapshot = srdexperiment.Replay(snap, snap, snap, snap, snap)
	assert.Equal(t, 1, execute(context.Background(), o, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "rtt-load snapshot: srdexperiment: replay")
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.NotNil(t, rep.Paths)
	require.Len(t, rep.Paths.Loaded, 1, "the loaded row it measured")
	assert.Len(t, rep.Paths.Targets[0].Windows, 3, "no window without its closing snapshot")
	assert.Contains(t, rep.Error, "rtt-load snapshot")
}
