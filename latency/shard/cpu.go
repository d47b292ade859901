package shard

import (
	"runtime"
	"time"
)

// cpuSample is a reading of the process's (and its cgroup's) CPU use,
// taken when a measurement starts; stop returns the use since then.
type cpuSample struct {
	wall    time.Time
	process time.Duration
	ok      bool
	cg      cgroupReading
	host    hostReading
}

// hostReading is the host's CPU time, busy and in all, in clock ticks
// (/proc/stat); ok is false when it cannot be read.
type hostReading struct {
	busy, total uint64
	ok          bool
}

// cgroupReading is what the cgroup says, each field known or not.
type cgroupReading struct {
	usage              *time.Duration
	quotaCores         float64
	source             string
	periods, throttled *int64
}

// startCPU reads the CPU time used so far by the process and its cgroup.
func startCPU() *cpuSample {
	p, ok := processCPU()
	return &cpuSample{wall: time.Now(), process: p, ok: ok, cg: readCgroup(), host: readHost()}
}

// stop returns the CPU used since startCPU and the limit the process ran
// under; nil when the platform cannot say (no getrusage) or s is nil.
func (s *cpuSample) stop() *CPU {
	if s == nil || !s.ok {
		return nil
	}
	p, ok := processCPU()
	if !ok {
		return nil
	}
	end := readCgroup()
	c := &CPU{Process: p - s.process, Wall: time.Since(s.wall), LimitCores: float64(runtime.NumCPU()), LimitSource: "cpus"}
	if end.usage != nil && s.cg.usage != nil {
		d := *end.usage - *s.cg.usage
		c.Cgroup = &d
	}
	if end.quotaCores > 0 {
		c.LimitCores, c.LimitSource = end.quotaCores, end.source
		if end.periods != nil && s.cg.periods != nil && end.throttled != nil && s.cg.throttled != nil {
			p, t := *end.periods-*s.cg.periods, *end.throttled-*s.cg.throttled
			c.Periods, c.Throttled = &p, &t
		}
	}
	if h := readHost(); h.ok && s.host.ok && h.total > s.host.total && h.busy >= s.host.busy {
		busy := min(float64(h.busy-s.host.busy)/float64(h.total-s.host.total), 1)
		c.HostBusy = &busy
	}
	return c
}
