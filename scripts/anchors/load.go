package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Load is the machine's state before an anchor: read over an idle pause in
// which this tool runs nothing, so that what it sees is other programs'.
type Load struct {
	PauseSeconds float64 `json:"pause_s"`
	// Load1 is the 1-minute load average at the end of the pause (it still
	// carries the previous anchor's processes, so it decides nothing).
	Load1 float64 `json:"loadavg_1m"`
	// CPUBusyPct is the share of all CPUs' time that was not idle during
	// the pause (/proc/stat: everything but idle and iowait).
	CPUBusyPct float64 `json:"cpu_busy_pct"`
	// CPUStallPct is the share of the pause in which some runnable task
	// waited for a CPU (/proc/pressure/cpu "some"); -1 without PSI.
	CPUStallPct float64 `json:"cpu_stall_pct"`
	Busy        bool    `json:"busy"`
	// Rule states the thresholds the pause was judged by.
	Rule string `json:"rule"`
}

// limits are the "too busy to judge" thresholds.
type limits struct {
	maxBusy  float64 // percent of all CPUs busy during the pause
	maxStall float64 // percent of the pause with a task waiting for a CPU
}

func (l limits) rule() string {
	return fmt.Sprintf("busy when, over the idle pause, the CPUs were more than %.0f %% busy or a task waited for a CPU more than %.0f %% of the time", l.maxBusy, l.maxStall)
}

// cpuTimes is /proc/stat's first line: all CPUs' busy and total jiffies.
type cpuTimes struct{ busy, total float64 }

// parseProcStat reads the aggregate "cpu" line of /proc/stat.
func parseProcStat(r io.Reader) (cpuTimes, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[0] != "cpu" {
			continue
		}
		var t cpuTimes
		for i, s := range f[1:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("anchors: /proc/stat: %w", err)
			}
			if i >= 8 { // guest time is already in user and nice
				break
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("anchors: /proc/stat: no cpu line")
}

// parsePSITotal returns the "some" line's total= (microseconds stalled).
func parsePSITotal(r io.Reader) (float64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, fmt.Errorf("anchors: cpu pressure: %w", err)
				}
				return x, nil
			}
		}
	}
	return 0, fmt.Errorf("anchors: cpu pressure: no some total")
}

func readWith[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("anchors: %w", err)
	}
	defer f.Close()
	return parse(f)
}

// measureLoad sleeps for pause and judges the machine by what it did
// meanwhile.
func measureLoad(ctx context.Context, pause time.Duration, l limits) (*Load, error) {
	t0, err := readWith("/proc/stat", parseProcStat)
	if err != nil {
		return nil, err
	}
	p0, psiErr := readWith("/proc/pressure/cpu", parsePSITotal)
	start := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(pause):
	}
	el := time.Since(start)
	t1, err := readWith("/proc/stat", parseProcStat)
	if err != nil {
		return nil, err
	}
	ld := &Load{PauseSeconds: round1(el.Seconds()), CPUStallPct: -1, Rule: l.rule()}
	if dt := t1.total - t0.total; dt > 0 {
		ld.CPUBusyPct = 100 * (t1.busy - t0.busy) / dt
	}
	if p1, err := readWith("/proc/pressure/cpu", parsePSITotal); err == nil && psiErr == nil {
		ld.CPUStallPct = 100 * (p1 - p0) / float64(el.Microseconds())
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			ld.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	ld.CPUBusyPct, ld.CPUStallPct = round1(ld.CPUBusyPct), round1(ld.CPUStallPct)
	ld.Busy = ld.CPUBusyPct > l.maxBusy || ld.CPUStallPct > l.maxStall
	return ld, nil
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// String is the load as the table's busy cells say it.
func (l *Load) String() string {
	if l == nil {
		return "load unknown"
	}
	s := fmt.Sprintf("CPUs %.0f %% busy", l.CPUBusyPct)
	if l.CPUStallPct >= 0 {
		s += fmt.Sprintf(", %.0f %% stalled", l.CPUStallPct)
	}
	return s + fmt.Sprintf(" over a %.0f s idle pause", l.PauseSeconds)
}
