package main

// The agent's own starvation: what its threads waited for a CPU, the
// host's (and on cgroup v2 its cgroup's) CPU pressure, and the CFS
// throttling of its cgroup. Reading (the methods of starvation) is apart
// from parsing (the parse functions, which take an io.Reader), as in
// prometheus/procfs.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var errStarveFormat = errors.New("agent: unexpected format")

// parseSchedstat reads /proc/PID/task/TID/schedstat: nanoseconds on a
// CPU, nanoseconds waiting on a run queue, and time slices.
func parseSchedstat(r io.Reader) (run, wait time.Duration, err error) {
	b, err := io.ReadAll(io.LimitReader(r, 256))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("schedstat %q: %w", b, errStarveFormat)
	}
	var v [2]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i], 10, 63); err != nil {
			return 0, 0, fmt.Errorf("schedstat %q: %w", b, errStarveFormat)
		}
	}
	return time.Duration(v[0]), time.Duration(v[1]), nil
}

// pressure is one /proc/pressure/cpu (or cgroup v2 cpu.pressure) file:
// the total stall time of "some" and, where the kernel has it, "full".
type pressure struct {
	some, full time.Duration
	hasFull    bool
}

// parsePressure reads a PSI file: lines such as
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345" (total in µs).
func parsePressure(r io.Reader) (pressure, error) {
	var p pressure
	var hasSome bool
	sc := bufio.NewScanner(io.LimitReader(r, 4096))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var total time.Duration
		found := false
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 53)
				if err != nil {
					return p, fmt.Errorf("pressure %q: %w", kv, errStarveFormat)
				}
				total, found = time.Duration(n)*time.Microsecond, true
			}
		}
		if !found {
			return p, fmt.Errorf("pressure line %q: no total: %w", sc.Text(), errStarveFormat)
		}
		switch f[0] {
		case "some":
			p.some, hasSome = total, true
		case "full":
			p.full, p.hasFull = total, true
		}
	}
	if err := sc.Err(); err != nil {
		return p, err
	}
	if !hasSome {
		return p, fmt.Errorf("pressure: no some line: %w", errStarveFormat)
	}
	return p, nil
}

// cpuStat is a cgroup's CFS bandwidth counters (cpu.stat): periods with a
// quota, periods throttled, and the time throttled. v1 spells the time
// throttled_time in ns, v2 throttled_usec.
type cpuStat struct {
	periods, throttled uint64
	throttledTime      time.Duration
}

// parseCPUStat reads a cgroup v1 or v2 cpu.stat; a file without
// nr_throttled (v2 without the cpu controller) is an error.
func parseCPUStat(r io.Reader) (cpuStat, error) {
	var s cpuStat
	var has bool
	sc := bufio.NewScanner(io.LimitReader(r, 4096))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 63)
		if err != nil {
			return s, fmt.Errorf("cpu.stat %q: %w", sc.Text(), errStarveFormat)
		}
		switch k {
		case "nr_periods":
			s.periods = n
		case "nr_throttled":
			s.throttled, has = n, true
		case "throttled_time": // v1, ns
			s.throttledTime = time.Duration(n)
		case "throttled_usec": // v2
			s.throttledTime = time.Duration(n) * time.Microsecond
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !has {
		return s, fmt.Errorf("cpu.stat: no nr_throttled: %w", errStarveFormat)
	}
	return s, nil
}

// cgroupCPUDir finds the directory of the agent's cgroup that holds the
// CPU controller's files, from /proc/self/cgroup's lines
// ("0::/path" on v2, "N:cpu,cpuacct:/path" on v1) under root
// (/sys/fs/cgroup). "" when there is none.
func cgroupCPUDir(r io.Reader, root string, exists func(string) bool) string {
	sc := bufio.NewScanner(io.LimitReader(r, 16384))
	var v2 string
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "cpu" {
				continue
			}
			for _, mnt := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
				d := filepath.Join(root, mnt, parts[2])
				if exists(filepath.Join(d, "cpu.stat")) {
					return d
				}
			}
		}
	}
	if v2 != "" {
		d := filepath.Join(root, v2)
		if exists(filepath.Join(d, "cpu.stat")) && exists(filepath.Join(root, "cgroup.controllers")) {
			return d
		}
	}
	return ""
}

// starvation reads the agent's own starvation counters and judges probes.
// Safe for concurrent use.
type starvation struct {
	procDir  string        // /proc/self
	thread   string        // the calling thread's schedstat: /proc/thread-self/schedstat
	psiFile  string        // /proc/pressure/cpu
	waitFlag time.Duration // run-queue wait during a probe that flags it

	mu       sync.Mutex
	cgDir    string                   // the cgroup's cpu.stat directory, "" if none
	lastWait map[string]time.Duration // per thread, to keep the total monotonic
	waitSum  time.Duration
	// The threads' schedstat files, kept open and read again from offset
	// 0 (one pread a thread); the list is read again at most every
	// taskListEvery, so a sample costs a few microseconds a thread.
	tasks     map[string]*os.File
	tasksRead time.Time
}

// taskListEvery is how often the agent's thread list is read again; a
// thread started since waits at most that long to be counted.
const taskListEvery = time.Second

// newStarvation finds the agent's cgroup; waitFlag is -starved-wait.
func newStarvation(waitFlag time.Duration) *starvation {
	s := &starvation{procDir: "/proc/self", thread: "/proc/thread-self/schedstat", psiFile: "/proc/pressure/cpu",
		waitFlag: waitFlag, lastWait: map[string]time.Duration{}}
	s.findCgroup()
	return s
}

// findCgroup finds the agent's cgroup again: at start and at each scrape,
// so an agent moved into another cgroup (a quota set on it) is followed.
func (s *starvation) findCgroup() {
	f, err := os.Open(filepath.Join(s.procDir, "cgroup"))
	if err != nil {
		return
	}
	d := cgroupCPUDir(f, "/sys/fs/cgroup", func(p string) bool { _, err := os.Stat(p); return err == nil })
	f.Close()
	s.mu.Lock()
	s.cgDir = d
	s.mu.Unlock()
}

func (s *starvation) cgroupDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cgDir
}

// starveSample is the counters at one moment.
type starveSample struct {
	wait      time.Duration
	throttled uint64
	ok        bool
}

// waitTotal is the run-queue wait of the agent's threads since start: the
// sum over threads of each one's growth, so a thread that exits does not
// take its wait back.
func (s *starvation) waitTotal() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listTasks()
	if len(s.tasks) == 0 {
		return 0, false
	}
	now := make(map[string]time.Duration, len(s.tasks))
	var buf [128]byte
	for p, f := range s.tasks {
		n, err := f.ReadAt(buf[:], 0)
		if n == 0 && err != nil {
			f.Close() // the thread exited
			delete(s.tasks, p)
			continue
		}
		_, w, err := parseSchedstat(bytes.NewReader(buf[:n]))
		if err != nil {
			continue
		}
		if last := s.lastWait[p]; w >= last {
			s.waitSum += w - last
		}
		now[p] = w
	}
	s.lastWait = now // threads that exited are gone; what they waited stays
	return s.waitSum, true
}

// listTasks opens the schedstat files of threads started since the last
// listing, at most every taskListEvery. s.mu is held.
func (s *starvation) listTasks() {
	if s.tasks != nil && time.Since(s.tasksRead) < taskListEvery {
		return
	}
	s.tasksRead = time.Now()
	if s.tasks == nil {
		s.tasks = map[string]*os.File{}
	}
	paths, _ := filepath.Glob(filepath.Join(s.procDir, "task", "*", "schedstat"))
	for _, p := range paths {
		if _, ok := s.tasks[p]; ok {
			continue
		}
		if f, err := os.Open(p); err == nil {
			s.tasks[p] = f
		}
	}
}

func (s *starvation) cpuStat() (cpuStat, bool) {
	d := s.cgroupDir()
	if d == "" {
		return cpuStat{}, false
	}
	f, err := os.Open(filepath.Join(d, "cpu.stat"))
	if err != nil {
		return cpuStat{}, false
	}
	defer f.Close()
	st, err := parseCPUStat(f)
	return st, err == nil
}

// sample reads the counters that judge uses; a nil s gives a zero sample.
func (s *starvation) sample() starveSample {
	if s == nil {
		return starveSample{}
	}
	w, ok := s.waitTotal()
	st, _ := s.cpuStat()
	return starveSample{wait: w, throttled: st.throttled, ok: ok}
}

// sampleThread is sample with wait the calling thread's own run-queue
// wait, for a probe that runs on one thread locked to its goroutine (an
// RTT probe's ping-pong): what the agent's scheduling added to its round
// trips, where the sum over every thread also holds the garbage
// collector's, the runtime's and other probes' waits (on two cores twelve
// agents' sums flagged 81-94 % of their probes at 15 % host pressure).
// Where the thread's file cannot be read it is sample.
func (s *starvation) sampleThread() starveSample {
	smp := s.sample()
	if s == nil || s.thread == "" {
		return smp
	}
	b, err := os.ReadFile(s.thread)
	if err != nil {
		return smp
	}
	if _, w, err := parseSchedstat(bytes.NewReader(b)); err == nil {
		smp.wait = w
	}
	return smp
}

// judge tells why a probe of n messages between two samples ran starved:
// "throttled" when the cgroup was throttled, "wait" when the probe's
// thread (sampleThread; all the agent's threads together for a sample,
// an upper bound) waited for a CPU at least waitFlag a message on
// average, so a probe of 1000 messages is judged as one of 5; "" when
// neither.
func (s *starvation) judge(before, after starveSample, n int64) string {
	switch {
	case s == nil || !before.ok || !after.ok:
		return ""
	case after.throttled > before.throttled:
		return "throttled"
	case after.wait-before.wait >= time.Duration(max(n, 1))*s.waitFlag:
		return "wait"
	}
	return ""
}

// waited is the run-queue wait between two samples.
func waited(before, after starveSample) time.Duration {
	if !before.ok || !after.ok {
		return 0
	}
	return after.wait - before.wait
}

// starveCollector exports the counters at scrape time.
type starveCollector struct {
	s                                   *starvation
	wait, psi, cgPSI, periods, thr, thT *prometheus.Desc
}

func newStarveCollector(s *starvation) *starveCollector {
	return &starveCollector{s: s,
		wait: prometheus.NewDesc("netperfkit_agent_runqueue_wait_seconds_total",
			"Time the agent's own threads waited on a run queue for a CPU (/proc/self/task/*/schedstat), with or without a CPU limit.", nil, nil),
		psi: prometheus.NewDesc("netperfkit_agent_host_cpu_pressure_seconds_total",
			"The host's CPU pressure stall time (/proc/pressure/cpu total), by kind: some (at least one task waited for a CPU).", []string{"kind"}, nil),
		cgPSI: prometheus.NewDesc("netperfkit_agent_cgroup_cpu_pressure_seconds_total",
			"The agent's cgroup's CPU pressure stall time (cgroup v2 cpu.pressure), by kind: some, full.", []string{"kind"}, nil),
		periods: prometheus.NewDesc("netperfkit_agent_cpu_periods_total",
			"CFS periods of the agent's cgroup with a CPU quota in force (cpu.stat nr_periods).", nil, nil),
		thr: prometheus.NewDesc("netperfkit_agent_cpu_throttled_periods_total",
			"CFS periods in which the agent's cgroup was throttled by its CPU quota (cpu.stat nr_throttled).", nil, nil),
		thT: prometheus.NewDesc("netperfkit_agent_cpu_throttled_seconds_total",
			"Time the agent's cgroup was throttled by its CPU quota (cpu.stat throttled_time on cgroup v1, throttled_usec on v2).", nil, nil),
	}
}

func (c *starveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.wait, c.psi, c.cgPSI, c.periods, c.thr, c.thT} {
		ch <- d
	}
}

func (c *starveCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.findCgroup()
	if w, ok := c.s.waitTotal(); ok {
		ch <- prometheus.MustNewConstMetric(c.wait, prometheus.CounterValue, w.Seconds())
	}
	if p, ok := readPressure(c.s.psiFile); ok {
		ch <- prometheus.MustNewConstMetric(c.psi, prometheus.CounterValue, p.some.Seconds(), "some")
	}
	if d := c.s.cgroupDir(); d != "" {
		if p, ok := readPressure(filepath.Join(d, "cpu.pressure")); ok {
			ch <- prometheus.MustNewConstMetric(c.cgPSI, prometheus.CounterValue, p.some.Seconds(), "some")
			if p.hasFull {
				ch <- prometheus.MustNewConstMetric(c.cgPSI, prometheus.CounterValue, p.full.Seconds(), "full")
			}
		}
	}
	if st, ok := c.s.cpuStat(); ok {
		ch <- prometheus.MustNewConstMetric(c.periods, prometheus.CounterValue, float64(st.periods))
		ch <- prometheus.MustNewConstMetric(c.thr, prometheus.CounterValue, float64(st.throttled))
		ch <- prometheus.MustNewConstMetric(c.thT, prometheus.CounterValue, st.throttledTime.Seconds())
	}
}

func readPressure(path string) (pressure, bool) {
	f, err := os.Open(path)
	if err != nil {
		return pressure{}, false
	}
	defer f.Close()
	p, err := parsePressure(f)
	return p, err == nil
}
