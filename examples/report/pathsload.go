package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/underload"
)

// defaultLoadedMPS is -rtt-load-mps' default: enough round trips in the
// default 2 s run (1.6 s after the warm-up) for a p99.9.
const defaultLoadedMPS = 1000

// loadedPhase is the name of E1's fourth counter window, the RTT under
// load.
const loadedPhase = "rtt-load"

// loadedWarmUp is how much of the loaded run the probe leaves out, as the
// idle ping-pong's default warm-up does: the flow's slow start.
const loadedWarmUp = 400 * time.Millisecond

// LoadedRTT is one path's round trips measured while its N-stream flow ran
// (-rtt-load on), to set beside the idle ones in the target's "rtt".
type LoadedRTT struct {
	Name    string `json:"name"`
	Streams int    `json:"streams"`
	// FlowBitsPerSecond is what the flow delivered while the probe ran.
	FlowBitsPerSecond float64 `json:"flow_bits_per_second"`
	// ProbeMPS is the probe's rate (-rtt-load-mps): every message is
	// answered, and timed from its intended send time.
	ProbeMPS int `json:"probe_mps"`
	// RTT is the probe's round trips (p50_us, p99_us, p999_us...).
	RTT latency.Summary `json:"rtt"`
	// RatioP50, RatioP99 and RatioP999 are the loaded percentile over the
	// idle one; 0 when either is unknown.
	RatioP50  float64 `json:"ratio_p50"`
	RatioP99  float64 `json:"ratio_p99"`
	RatioP999 float64 `json:"ratio_p999"`
	// ClientShareP99Us is the probe's own share (latency's SendLateness
	// p99 plus ReceiveWake p99), 0 when not measured.
	ClientShareP99Us float64 `json:"client_share_p99_us"`
	// SenderCPUPercent is the flow's sending process's CPU use (percent of
	// one CPU; the probe runs in it too), -1 when unknown (the in-process
	// server shares the process).
	SenderCPUPercent float64 `json:"sender_cpu_percent"`
	// ProbeCPUPercent is the latency probe's own threads' CPU use
	// (latency.PingPongResult.CPU, percent of one CPU over the probe's
	// run), -1 when unknown.
	ProbeCPUPercent float64 `json:"probe_cpu_percent"`
	// ProcessCPUPercent is, with the in-process server, the whole report
	// process's CPU use: flow client, server and probe together.
	ProcessCPUPercent float64 `json:"process_cpu_percent,omitempty"`
	// HostCPUPercent is how busy all of the report host's CPUs were while
	// the flow ran (/proc/stat), 0-100; -1 when unknown (not linux).
	HostCPUPercent float64 `json:"host_cpu_percent"`
	// TCPLimits is what held the flow's senders back (their kernel's
	// accounting); nil when unknown.
	TCPLimits *throughput.TCPLimits `json:"tcp_limits,omitempty"`
	// AttributedTo is "path" when nothing says the generator shaped the
	// loaded RTT, "generator" when something does (GeneratorNote says
	// what), "" when nothing was measured.
	AttributedTo  string `json:"attributed_to"`
	GeneratorNote string `json:"generator_note,omitempty"`
	// Error says why the loaded RTT is missing or partial.
	Error string `json:"error,omitempty"`
}

// loaded returns the path's loaded RTT, nil when it has none.
func (sec *PathsSection) loaded(name string) *LoadedRTT {
	for i := range sec.Loaded {
		if sec.Loaded[i].Name == name {
			return &sec.Loaded[i]
		}
	}
	return nil
}

// loadedRun is what runLoaded needs besides the targets.
type loadedRun struct {
	iface     string
	spin      time.Duration
	inProcess bool
	snapshot  func(string) (*ethtool.Snapshot, error)
}

// runLoaded measures each path's RTT while its N-stream flow runs, each in
// its own counter window (phase "rtt-load", appended to the target's
// windows). A target whose idle phases failed is skipped; a loaded run
// that fails keeps its error in its row. It returns ctx's error, or a
// snapshot's.
func runLoaded(ctx context.Context, sec *PathsSection, o *options, lr loadedRun, prog *progress) error {
	for i := range sec.Targets {
		t := &sec.Targets[i]
		l := LoadedRTT{Name: t.Name, Streams: t.Streams, ProbeMPS: o.rttLoadMPS, SenderCPUPercent: -1, HostCPUPercent: -1, ProbeCPUPercent: -1}
		if t.Error != "" {
			l.Error = "not measured: the idle phases failed"
			sec.Loaded = append(sec.Loaded, l)
			continue
		}
		prog.Start("E1 paths: "+t.Name+" "+loadedPhase, o.rttD)
		before, err := lr.snap()
		if err != nil {
			return err
		}
		cpu := readHostCPU()
		res, runErr := underload.Run(ctx, t.ThroughputAddr, &underload.Config{
			Flows:    throughput.Config{Streams: t.Streams, Duration: o.rttD, Interval: -1},
			EchoAddr: t.PingPongAddr,
			Probe: &latency.PingPongConfig{Network: "udp", Spin: lr.spin, MPS: o.rttLoadMPS,
				WarmUp: min(loadedWarmUp, o.rttD/4)},
		})
		l.HostCPUPercent = busyPercent(cpu, readHostCPU())
		after, snapErr := lr.snap()
		fillLoaded(&l, t.RTT, res, lr)
		if runErr != nil && ctx.Err() == nil {
			l.Error = runErr.Error()
		}
		if sec.loadedHists != nil && res.Latency != nil && res.Latency.Recorder != nil {
			sec.loadedHists[t.Name] = res.Latency.Recorder.Snapshot()
		}
		sec.Loaded = append(sec.Loaded, l)
		if snapErr != nil {
			return errors.Join(runErr, snapErr)
		}
		w := srd.NewWindow(before, after)
		w.Phase = loadedPhase
		if lr.iface == "" {
			w.Reason = "no interface was given to snapshot"
		}
		t.Windows = append(t.Windows, w)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", loadedPhase, err)
		}
	}
	return nil
}

// snap reads the interface's counters as srdexperiment does: nothing to
// read without an interface, an empty snapshot when it has no statistics.
func (lr loadedRun) snap() (*ethtool.Snapshot, error) {
	if lr.iface == "" {
		return &ethtool.Snapshot{Time: time.Now()}, nil
	}
	s, err := lr.snapshot(lr.iface)
	if errors.Is(err, ethtool.ErrNoStats) {
		return &ethtool.Snapshot{Time: time.Now(), Interface: lr.iface}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s snapshot: %w", loadedPhase, err)
	}
	return s, nil
}

// fillLoaded copies a loaded run into l and judges it against the idle
// RTT.
func fillLoaded(l *LoadedRTT, idle latency.Summary, res *underload.Result, lr loadedRun) {
	if res == nil || res.Flows == nil {
		return
	}
	row := MatrixRow{Direction: "upload", Protocol: "tcp", Streams: l.Streams}
	fillRow(&row, res.Flows, false, lr.inProcess, 0)
	l.FlowBitsPerSecond = row.ReceivedBitsPerSecond
	l.SenderCPUPercent, l.ProcessCPUPercent, l.TCPLimits = row.SenderCPUPercent, row.ProcessCPUPercent, row.TCPLimits
	if res.Latency == nil {
		l.Error = "the probe measured nothing"
		if n := res.Flows.Notes; len(n) > 0 {
			l.Error = n[len(n)-1]
		}
		return
	}
	p := res.Latency
	l.RTT = p.Summary
	if p.CPU > 0 && p.RunTime > 0 {
		l.ProbeCPUPercent = 100 * p.CPU.Seconds() / p.RunTime.Seconds()
	}
	var share time.Duration
	if p.SendLateness != nil {
		share += p.SendLateness.P99
	}
	if p.ReceiveWake != nil {
		share += p.ReceiveWake.P99
	}
	l.ClientShareP99Us = float64(share) / 1e3
	l.RatioP50, l.RatioP99, l.RatioP999 = ratio(l.RTT.P50, idle.P50), ratio(l.RTT.P99, idle.P99), ratio(l.RTT.P999, idle.P999)
	l.AttributedTo, l.GeneratorNote = judgeLoaded(l, share, runtime.NumCPU(), lr.spin > 0)
}

func ratio(loaded, idle time.Duration) float64 {
	if loaded <= 0 || idle <= 0 {
		return 0
	}
	return float64(loaded) / float64(idle)
}

// probeCores is what the probe's own threads may take of the sending
// host: by default its sender sleeps to each send (a few percent of a
// core, ProbeCPUPercent); in spin mode it busy-waits for gaps under 2 ms
// (latency.PingPongConfig MPS), as sockperf's does, and a second thread
// spins on the replies.
func probeCores(l *LoadedRTT, spin bool) int {
	if !spin {
		return 0
	}
	if l.ProbeMPS > 500 {
		return 2
	}
	return 1
}

// hostBusy is how busy, in percent, the host's CPUs may be while the
// probe runs beside the flow before its loaded RTT is the generator's: at
// 89-90 % an unshaped veth's loaded p50 read 13.7-36 ms against 24-30 us
// idle, all of it the probe waiting for a CPU (issue 42's CI runs).
const hostBusy = 75.0

// judgeLoaded says whether the loaded RTT is the path's, or whether the
// generator shaped it: the flow's sender was CPU-bound (its CPU, the
// probe's included, at 90% of the cores it could use) or left its
// connections idle (TCP_INFO), the host's CPUs were 90% busy, or the
// probe's own share is a large part of its p99 (the rule of pingpong and
// cachebench). The in-process server
// makes the report's whole process the sender's.
func judgeLoaded(l *LoadedRTT, share time.Duration, cpus int, spin bool) (attributed, note string) {
	var notes []string
	cores := max(1, min(l.Streams+probeCores(l, spin), cpus))
	switch {
	case l.ProcessCPUPercent > 0 && l.ProcessCPUPercent >= cpuSaturated*float64(cpus):
		notes = append(notes, fmt.Sprintf("the report's own process (flow client and server, and the probe) used %.0f%% of %d CPU(s)", l.ProcessCPUPercent, cpus))
	case l.SenderCPUPercent >= cpuSaturated*float64(cores):
		notes = append(notes, fmt.Sprintf("the flow's sender was CPU-bound: %.0f%% of %d core(s), the probe's included", l.SenderCPUPercent, cores))
	}
	if l.HostCPUPercent >= hostBusy {
		notes = append(notes, fmt.Sprintf("the host's %d CPU(s) were %.0f%% busy: the probe waited for a CPU beside the flow", cpus, l.HostCPUPercent))
	}
	if lim := l.TCPLimits; lim != nil && 1-lim.Busy >= stallShare {
		notes = append(notes, fmt.Sprintf("the flow's sender left its connections idle %.0f%% of the time (sender application)", 100*(1-lim.Busy)))
	}
	if p99 := l.RTT.P99; p99 > 0 && 4*share >= p99 {
		notes = append(notes, fmt.Sprintf("the probe's own share (send lateness p99 + receive wake-up p99: %.1f us) is a large part of its p99 %.1f us", float64(share)/1e3, float64(p99)/1e3))
	}
	if len(notes) == 0 {
		return "path", ""
	}
	return "generator", strings.Join(notes, "; ")
}

// writeLoadedText prints E1's RTT table a post would want: one row per
// path, idle and loaded side by side, and why a row's loaded RTT is the
// generator's when it is.
func writeLoadedText(w io.Writer, sec *PathsSection) error {
	if sec.Result == nil || len(sec.Loaded) == 0 {
		return nil
	}
	streams, mps := 0, 0
	for _, l := range sec.Loaded {
		streams, mps = max(streams, l.Streams), max(mps, l.ProbeMPS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "E1 RTT: idle and under the %d-stream flow's load (probe of %d msg/s beside the flow; x = loaded / idle)\n", streams, mps)
	tb := newTable(w, "path", "flow (Gbit/s)", "p50 idle (us)", "p50 loaded (us)", "x p50", "p99 idle (us)", "p99 loaded (us)", "x p99",
		"p99.9 idle (us)", "p99.9 loaded (us)", "x p99.9", "loaded RTT is")
	var notes []string
	for _, t := range sec.Targets {
		l := sec.loaded(t.Name)
		if l == nil {
			continue
		}
		cell := func(d time.Duration) string {
			if l.RTT.Observations == 0 {
				return "-"
			}
			return us(float64(d) / 1e3)
		}
		by := "-"
		switch l.AttributedTo {
		case "path":
			by = "the path's"
		case "generator":
			by = "the generator's (see note)"
			notes = append(notes, fmt.Sprintf("%s: loaded RTT not the path's alone: %s", t.Name, l.GeneratorNote))
		}
		tb.row(t.Name, gbit(l.FlowBitsPerSecond),
			us(float64(t.RTT.P50)/1e3), cell(l.RTT.P50), times(l.RatioP50),
			us(float64(t.RTT.P99)/1e3), cell(l.RTT.P99), times(l.RatioP99),
			us(float64(t.RTT.P999)/1e3), cell(l.RTT.P999), times(l.RatioP999), by)
		if l.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: loaded RTT: %s", t.Name, l.Error))
		}
		if l.ProbeCPUPercent > 0 {
			notes = append(notes, fmt.Sprintf("%s: the probe's own threads used %.1f%% of a CPU", t.Name, l.ProbeCPUPercent))
		}
		if n := l.RTT.Observations; n > 0 && n < 1000 {
			notes = append(notes, fmt.Sprintf("%s: loaded RTT from %d round trips: a p99.9 needs 1000 (raise -rtt-d or -rtt-load-mps)", t.Name, n))
		}
	}
	if err := tb.flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// times is a ratio cell: "1.23x", "-" when unknown.
func times(r float64) string {
	if r <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// rttSeries are the RTT spectrum plot's curves: each path's idle RTT and,
// beside it, its RTT under load when measured.
func rttSeries(sec *PathsSection) []spectrumSeries {
	var series []spectrumSeries
	for _, t := range sec.Targets {
		h, lh := sec.rttHists[t.Name], sec.loadedHists[t.Name]
		name := t.Name
		if lh != nil {
			name += " idle"
		}
		if h != nil {
			series = append(series, spectrumSeries{Name: name, Hist: h})
		}
		if lh != nil {
			series = append(series, spectrumSeries{Name: fmt.Sprintf("%s under %d-stream load", t.Name, t.Streams), Hist: lh})
		}
	}
	return series
}

// loadedMetrics are a path's loaded RTT and its ratios to the idle RTT,
// for -compare: each a single run (n=1), as E1's other figures.
func loadedMetrics(name string, l *LoadedRTT) []metric {
	var out []metric
	for _, m := range []struct {
		what  string
		v     time.Duration
		ratio float64
	}{{"p50", l.RTT.P50, l.RatioP50}, {"p99", l.RTT.P99, l.RatioP99}, {"p99.9", l.RTT.P999, l.RatioP999}} {
		v := float64(m.v) / 1e3
		out = append(out, metric{"E1 " + name + " loaded RTT " + m.what, "us", false, one(v), []float64{v}})
		if m.ratio > 0 {
			out = append(out, metric{"E1 " + name + " loaded/idle RTT " + m.what, "x", false, one(m.ratio), []float64{m.ratio}})
		}
	}
	return out
}
