package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// hostCPU is a reading of the host's CPU time counters (/proc/stat's
// aggregate "cpu" line, in clock ticks): busy and all of it, over every CPU.
type hostCPU struct {
	busy, total uint64
	ok          bool
}

// readHostCPU reads the counters; ok is false where /proc/stat is missing
// (not linux): the host's CPU use is then unknown, never 0.
func readHostCPU() hostCPU {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return hostCPU{}
	}
	defer f.Close()
	c, err := parseProcStat(f)
	if err != nil {
		return hostCPU{}
	}
	return c
}

// busyPercent is the share of all CPUs' time the host was busy between
// two readings, 0-100; -1 when unknown.
func busyPercent(before, after hostCPU) float64 {
	if !before.ok || !after.ok || after.total <= before.total || after.busy < before.busy {
		return -1
	}
	return min(100, 100*float64(after.busy-before.busy)/float64(after.total-before.total))
}

// parseProcStat reads /proc/stat's "cpu" line: user nice system idle
// iowait irq softirq steal (guest time is inside user). Busy is all but
// idle and iowait.
func parseProcStat(r io.Reader) (hostCPU, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return hostCPU{}, fmt.Errorf("/proc/stat: cpu line with %d fields", len(f)-1)
		}
		var c hostCPU
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return hostCPU{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			if c.total+v < c.total {
				return hostCPU{}, errors.New("/proc/stat: cpu counters overflow")
			}
			c.total += v
			if i != 3 && i != 4 { // idle, iowait
				c.busy += v
			}
		}
		c.ok = true
		return c, nil
	}
	if err := sc.Err(); err != nil {
		return hostCPU{}, err
	}
	return hostCPU{}, errors.New("/proc/stat: no cpu line")
}
