package shard

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseProcCgroup reads /proc/self/cgroup: the paths of the v1 cpu and
// cpuacct controllers' groups and of the v2 group ("0::/path").
func parseProcCgroup(r io.Reader) (v1cpu, v1acct, v2 string, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls := strings.Split(parts[1], ",")
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slices.Contains(ctrls, "cpu"):
			v1cpu = parts[2]
			if slices.Contains(ctrls, "cpuacct") {
				v1acct = parts[2]
			}
		case slices.Contains(ctrls, "cpuacct"):
			v1acct = parts[2]
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", "", fmt.Errorf("shard: /proc/self/cgroup: %w", err)
	}
	return v1cpu, v1acct, v2, nil
}

// parseV1Quota returns the cores a v1 quota allows; false when unlimited
// (-1) or unreadable.
func parseV1Quota(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseInt(strings.TrimSpace(quota), 10, 64)
	p, err2 := strconv.ParseInt(strings.TrimSpace(period), 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return float64(q) / float64(p), true
}

// parseV2Max returns the cores cpu.max ("max 100000" or "50000 100000")
// allows; false when unlimited or unreadable.
func parseV2Max(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	return parseV1Quota(f[0], f[1])
}

// parseV1Usage reads cpuacct.usage, in nanoseconds.
func parseV1Usage(s string) *time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	d := time.Duration(n)
	return &d
}

// parseV2Usage reads usage_usec from a v2 cpu.stat.
func parseV2Usage(stat string) *time.Duration {
	if v, ok := statField(stat, "usage_usec"); ok {
		d := time.Duration(v) * time.Microsecond
		return &d
	}
	return nil
}

// parseCPUStat reads nr_periods and nr_throttled from cpu.stat (both
// versions name them so).
func parseCPUStat(stat string) (periods, throttled *int64) {
	p, ok1 := statField(stat, "nr_periods")
	t, ok2 := statField(stat, "nr_throttled")
	if !ok1 || !ok2 {
		return nil, nil
	}
	return &p, &t
}

func statField(stat, name string) (int64, bool) {
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseInt(f[1], 10, 64)
			return v, err == nil && v >= 0
		}
	}
	return 0, false
}

// parseProcStat reads the "cpu" line of /proc/stat: busy is every field
// but idle and iowait (the 4th and 5th), total all of them, in ticks.
func parseProcStat(s string) hostReading {
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			continue
		}
		var r hostReading
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return hostReading{}
			}
			// guest and guest_nice (9th, 10th) are already in user and nice.
			if i >= 8 {
				break
			}
			r.total += n
			if i != 3 && i != 4 {
				r.busy += n
			}
		}
		r.ok = true
		return r
	}
	return hostReading{}
}
